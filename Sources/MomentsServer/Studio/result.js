// A completed job: the highlight playing, its download, poster, storyboard, timeline exports, and
// the original's timeline. The highlight, poster and storyboard come through signed media links
// (an element cannot send the key; the player asks for byte ranges, so seeking works); the
// timelines, made on request, are fetched with the key and offered as blob: URLs.
import { blobURL, call, jobPath } from "./api.js";
import { $, showError } from "./dom.js";
import { showTimeline } from "./timeline.js";

let urls = [];
let shownJob = null;
let previewTimer = null;

function release() {
  for (const url of urls) URL.revokeObjectURL(url);
  urls = [];
}

async function media(path) {
  const url = await blobURL(path);
  urls.push(url);
  return url;
}

/// The path of a link the API made (its origin may be the configured public one, not the page's).
function sameOrigin(link) {
  const url = new URL(link, location.href);
  return url.pathname + url.search;
}

export const currentJob = () => shownJob;

export function hideResult() {
  release();
  clearTimeout(previewTimer);
  shownJob = null;
  $("#result").hidden = true;
  $("#player").removeAttribute("src");
}

/// Shows job `id` (completed) and returns its detail.
export async function showResult(id) {
  const job = await call("GET", jobPath(id));
  if (job.status !== "completed") throw new Error(job.error?.message || `This highlight is ${job.status}.`);
  if (job.media_deleted_at) throw new Error("This highlight's media were deleted.");
  release();
  shownJob = job;
  showError("recut-error");
  const short = job.job_id.slice(0, 8);
  const links = await call("GET", jobPath(id, "/media-links"));
  const player = $("#player");
  const download = $("#download");
  download.href = sameOrigin(links.highlight);
  download.download = `highlight_${short}.mp4`;
  // An original-quality highlight (HEVC, HDR: few browsers play it) plays its H.264 preview.
  const preview = job.output?.preview;
  download.textContent = preview ? "Download original" : "Download";
  offerShare(download.href, download.download);
  clearTimeout(previewTimer);
  showPreview(id, preview, links);
  $("#result").hidden = false;
  showTimeline(job, sameOrigin(links.storyboard));
  const pictures = [["#poster", links.poster], ["#storyboard", links.storyboard]].map(([selector, link]) => {
    const img = $(selector);
    img.hidden = false;
    img.onerror = () => { img.hidden = true; };
    img.src = sameOrigin(link);
  });
  const exports = ["fcpxml", "otio", "edl"].map(async (format) => {
    const link = $(`#export-${format}`);
    try {
      link.href = await media(jobPath(id, `/timeline?format=${format}`));
      link.download = `highlight_${short}.${format}`;
      link.hidden = false;
    } catch { link.hidden = true; }
  });
  await Promise.all([...pictures, ...exports]);
  return job;
}

/// Plays the preview once it is ready (asking again every 3 s while it is made), or the highlight.
function showPreview(id, preview, links) {
  const player = $("#player");
  const note = $("#preview-note");
  note.hidden = !preview || preview.state === "ready";
  if (preview?.state === "ready" && links.preview) {
    player.src = sameOrigin(links.preview);
    return;
  }
  if (!player.src || preview?.state !== "pending") player.src = sameOrigin(links.highlight);
  if (preview?.state === "pending") {
    note.textContent = "Making a preview for this browser; the original is ready to download.";
    previewTimer = setTimeout(async () => {
      if (shownJob?.job_id !== id) return;
      try {
        const job = await call("GET", jobPath(id));
        const fresh = job.output?.preview?.state === "ready" ? await call("GET", jobPath(id, "/media-links")) : links;
        if (shownJob?.job_id === id) showPreview(id, job.output?.preview, fresh);
      } catch { /* the next look, or the highlight, stays */ }
    }, 3000);
  } else if (preview) {
    note.textContent = "No preview could be made; download the original to watch it.";
  }
}

/// Share (the Web Share API with the file itself) where the browser can share a video file.
function offerShare(href, name) {
  const share = $("#share");
  const probe = typeof File === "function" ? [new File([""], "highlight.mp4", { type: "video/mp4" })] : [];
  share.hidden = !(navigator.canShare && navigator.canShare({ files: probe }));
  share.onclick = async () => {
    showError("recut-error");
    try {
      const blob = await (await fetch(href)).blob();
      await navigator.share({ files: [new File([blob], name, { type: blob.type || "video/mp4" })], title: "My highlight" });
    } catch (error) {
      if (error?.name !== "AbortError") showError("recut-error", "Sharing did not work here; use Download instead.");
    }
  };
}
