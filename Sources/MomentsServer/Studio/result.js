// A completed job: the highlight playing, its download, poster, storyboard, timeline exports, and
// the original's timeline. Media are fetched with the key and shown from blob: URLs (the whole file
// is in memory, so the player seeks anywhere).
import { blobURL, call, jobPath } from "./api.js";
import { $, showError } from "./dom.js";
import { showTimeline } from "./timeline.js";

let urls = [];
let shownJob = null;

function release() {
  for (const url of urls) URL.revokeObjectURL(url);
  urls = [];
}

async function media(path) {
  const url = await blobURL(path);
  urls.push(url);
  return url;
}

export const currentJob = () => shownJob;

export function hideResult() {
  release();
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
  const video = await media(jobPath(id, "/download"));
  const player = $("#player");
  player.src = video;
  const download = $("#download");
  download.href = video;
  download.download = `highlight_${short}.mp4`;
  $("#result").hidden = false;
  showTimeline(job);
  const pictures = [["#poster", "/poster"], ["#storyboard", "/storyboard.png"]].map(async ([selector, rest]) => {
    const img = $(selector);
    try { img.src = await media(jobPath(id, rest)); img.hidden = false; } catch { img.hidden = true; }
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
