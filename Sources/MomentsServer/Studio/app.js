// The studio's wiring: account → upload → progress → result → re-cuts, and the history.
import { call, jobPath, key } from "./api.js";
import { ensureAccount, initAccount, refreshAccount } from "./account.js";
import { $, showError } from "./dom.js";
import { follow } from "./follow.js";
import { initHistory, refreshHistory } from "./history.js";
import { progress } from "./progress.js";
import { currentJob, hideResult, showResult } from "./result.js";
import { described, describe, longestFor, refusal, setBusy } from "./limits.js";
import { initTimeline, marks } from "./timeline.js";
import { discard, savedUploads, stateOf, upload } from "./tus.js";

const CURRENT = "moments.current";
const HISTORY_EVERY_MS = 4000;
let chosen = null;
let run = 0;
/// The job the page is making (uploading or following), or null: one at a time, never dropped.
let making = null;

/// While a highlight is being made, "Make highlight" waits for it (a second press would be
/// refused and lose sight of the first).
function setMaking(id) {
  making = id;
  $("#make-button").textContent = id != null ? "Making your highlight…" : "Make highlight";
  setBusy(id != null);
}

/// The upload being sent (cancelled by "Cancel" while reconnecting).
let uploading = null;
/// The upload's control (its retryNow ends a reconnect wait).
let activeControl = null;

/// While the connection is down: "Reconnecting…", with Retry now and Cancel; null hides it.
function reconnecting(state) {
  const box = $("#reconnect");
  if (!state) { box.hidden = true; return; }
  box.hidden = false;
  $("#reconnect-text").textContent = state.offline
    ? "You are offline. Reconnecting as soon as the connection is back…"
    : `The connection dropped. Reconnecting in ${state.seconds} s…`;
}

/// Uploads this browser left half-sent (after a reload): "file.mp4 stopped at 38 %: Resume / Discard".
async function showStopped() {
  const [saved] = savedUploads();
  const box = $("#stopped");
  if (!saved) { box.hidden = true; return; }
  const state = await stateOf(saved.url).catch(() => null);
  if (!state || state.job) {
    if (!state) await discard(saved);
    box.hidden = true;
    return;
  }
  const percent = saved.size > 0 ? Math.floor((state.offset / saved.size) * 100) : 0;
  $("#stopped-text").textContent = `${saved.name} stopped at ${percent} %.`;
  box.hidden = false;
  $("#stopped-resume").onclick = () => {
    $("#stopped-text").textContent = `Choose ${saved.name} again to resume: the browser needs the file once more.`;
    $("#video").focus();
  };
  $("#stopped-discard").onclick = async () => {
    await discard(saved);
    box.hidden = true;
    refreshAccount();
  };
}

/// The ready highlight where the eyes are: scrolled to, its heading focused.
function reveal() {
  const title = $("#result-title");
  title.scrollIntoView({ block: "start", behavior: "instant" });
  title.focus({ preventScroll: true });
}

/// Which control an API error belongs next to.
function errorTarget(error) {
  const code = error.code || "";
  if (code.includes("target_duration")) return "length-error";
  if (code.includes("aspect")) return "aspect-error";
  if (code.includes("quality")) return "quality-error";
  if (error.status === 401 || error.status === 403) return "account-error";
  if ([402, 429, 503, 507].includes(error.status)) return "make-error";
  return "video-error";
}

function clearFormErrors() {
  for (const id of ["video-error", "length-error", "aspect-error", "quality-error", "make-error"]) showError(id);
}

function choose(file) {
  chosen = file || null;
  showError("video-error");
  $("#drop").classList.toggle("chosen", !!chosen);
  $("#chosen-name").textContent = chosen ? chosen.name : "";
  $("#drop-text").hidden = !!chosen;
  describe(chosen);
}

async function make(event) {
  event.preventDefault();
  if (making != null) return;
  clearFormErrors();
  if (!chosen) return showError("video-error", "Choose a video first.");
  setMaking("checking");
  if (!key.get()) {
    // No account yet: one is made now, its key shown to keep (Copy, Save), and the upload goes on.
    try {
      await ensureAccount();
    } catch (error) {
      setMaking(null);
      return showError("make-error", error);
    }
  }
  await described();
  const length = Number($("#length").value);
  const stop = (id, message) => {
    setMaking(null);
    if (id !== "video-error") $("#length").focus();
    showError(id, message);
  };
  if (!Number.isInteger(length) || length < 5 || length > 180) {
    return stop("length-error", "The length must be a whole number of seconds from 5 to 180.");
  }
  // Nothing is sent for a file the plan would refuse, or a highlight longer than the video.
  const refused = refusal(chosen);
  if (refused) return stop("video-error", refused);
  const longest = longestFor();
  if (longest != null && length > longest) {
    return stop("length-error", `This video is ${longest} s long: choose a length from 5 to ${longest} seconds.`);
  }
  setMaking("upload");
  const mine = ++run;
  progress.start("Starting the upload");
  $("#stopped").hidden = true;
  let id;
  const control = { signal: (uploading = new AbortController()).signal, waiting: reconnecting };
  activeControl = control;
  try {
    const fields = { target_duration: length, aspect: $("#aspect").value, quality: $("#quality").value };
    const sent = await upload(chosen, fields, (done, total, from) => { if (mine === run) progress.upload(done, total, from); }, control);
    id = sent.job;
    if (sent.resumed && (sent.fields.target_duration !== fields.target_duration || sent.fields.aspect !== fields.aspect)) {
      $("#stage").textContent = `Resumed your upload with the settings it started with (${sent.fields.target_duration} s, ${sent.fields.aspect}).`;
    }
  } catch (error) {
    setMaking(null);
    reconnecting(null);
    if (error?.name === "AbortError") {
      progress.failed("Upload cancelled; nothing was kept.");
      return;
    }
    progress.failed("Stopped: see the message above.");
    showError(errorTarget(error), error);
    return;
  } finally {
    reconnecting(null);
    uploading = null;
    activeControl = null;
  }
  localStorage.setItem(CURRENT, id);
  refreshHistory();
  try {
    await watch(id, mine);
  } catch (error) {
    showError("make-error", error);
  }
}

/// Follows job `id` on the progress bar (and over the player for a re-cut), then shows it; the
/// history follows along.
async function watch(id, mine, recutOf = null) {
  setMaking(id);
  let listed = Date.now();
  const stage = $("#result-stage");
  stage.hidden = recutOf == null;
  let final;
  try {
    final = await follow(id, (status) => {
      if (mine !== run) return;
      progress.job(status);
      if (recutOf != null) stage.textContent = `Re-cut: ${status.message || status.status} (${status.progress ?? 0} %)`;
      if (Date.now() - listed >= HISTORY_EVERY_MS) {
        listed = Date.now();
        refreshHistory();
      }
    });
  } finally {
    if (making === id) setMaking(null);
    stage.hidden = true;
  }
  refreshAccount();
  if (mine !== run || final.status !== "completed") refreshHistory();
  if (mine !== run) return;
  if (final.status === "completed") {
    await showResult(id);
    refreshHistory();
    reveal();
  } else {
    progress.failed(final.message || `The job ${final.status}.`);
    showError("make-error", final.message || `The job ${final.status}.`);
  }
}

async function recut() {
  const job = currentJob();
  if (!job) return;
  showError("recut-error");
  const aspect = $("#recut-aspect").value;
  const length = Number($("#recut-length").value);
  if (!Number.isInteger(length) || length < 5 || length > 180) {
    $("#recut-length").focus();
    return showError("recut-error", "The length must be a whole number of seconds from 5 to 180.");
  }
  const button = $("#recut-apply");
  button.disabled = true;
  try {
    const created = await call("POST", jobPath(job.job_id, "/recuts"), { aspect, target_duration: length, ...marks() });
    const mine = ++run;
    localStorage.setItem(CURRENT, created.job_id);
    progress.start(`Re-cut queued (${aspect === "source" ? "as filmed" : aspect})`, progress.share);
    refreshHistory();
    await watch(created.job_id, mine, job.job_id);
  } catch (error) {
    showError("recut-error", error);
  } finally {
    button.disabled = false;
  }
}

/// Opens a job of the history (or the one the page was following before a reload).
async function open(id) {
  showError("history-error");
  const mine = ++run;
  try {
    const status = await call("GET", jobPath(id, "/status"));
    localStorage.setItem(CURRENT, id);
    if (status.status === "completed") {
      progress.start(status.message || "Done", 100);
      await showResult(id);
      refreshHistory();
      reveal();
    } else if (status.status === "pending" || status.status === "processing") {
      progress.start(status.message, progress.share);
      await watch(id, mine);
    } else {
      showError("history-error", status.message || `This highlight is ${status.status}.`);
    }
  } catch (error) {
    showError("history-error", error);
  }
}

function signedIn(yes) {
  // A visitor may choose a video first: the account is made when they press Make.
  $("#make").hidden = false;
  $("#history").hidden = !yes;
  if (!yes) {
    run++;
    setMaking(null);
    hideResult();
    $("#progress-box").hidden = true;
    $("#jobs").replaceChildren();
    localStorage.removeItem(CURRENT);
    return;
  }
  refreshHistory();
  showStopped();
}

/// A file dropped anywhere on the page is the video (the browser would otherwise open it).
function initDrop() {
  const drop = $("#drop");
  const input = $("#video");
  input.addEventListener("change", () => choose(input.files[0]));
  for (const name of ["dragenter", "dragover"]) {
    document.addEventListener(name, (event) => { event.preventDefault(); drop.classList.add("over"); });
  }
  document.addEventListener("dragleave", (event) => { if (!event.relatedTarget) drop.classList.remove("over"); });
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const file = event.dataTransfer?.files?.[0];
    if (!file || $("#make").hidden) return;
    try { input.files = event.dataTransfer.files; } catch { /* read-only in some browsers */ }
    choose(file);
  });
}

async function start() {
  initAccount(signedIn);
  initTimeline();
  initHistory(open, (id) => { if (currentJob()?.job_id === id) hideResult(); });
  initDrop();
  $("#upload-form").addEventListener("submit", make);
  $("#retry-now").addEventListener("click", () => activeControl?.retryNow?.());
  $("#cancel-upload").addEventListener("click", () => uploading?.abort());
  $("#recut-apply").addEventListener("click", recut);
  await refreshAccount();
  const current = localStorage.getItem(CURRENT);
  if (key.get() && current) open(current);
}

start();
