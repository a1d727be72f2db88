// The one progress bar: the upload fills its first part, the job the rest. It only moves forward
// until a new run starts.
import { $ } from "./dom.js";

const UPLOAD_SHARE = 40;
let value = 0;

function set(next, message) {
  value = Math.max(value, Math.min(100, Math.round(next)));
  const bar = $("#progress");
  bar.setAttribute("aria-valuenow", String(value));
  bar.setAttribute("aria-valuetext", `${value} %${message ? `: ${message}` : ""}`);
  bar.style.setProperty("--value", `${value}%`);
  if (message) $("#stage").textContent = message;
}

export const progress = {
  /// A new run: the bar starts at `from` (0 for an upload, the upload's share for a re-cut).
  start(message, from = 0) {
    value = 0;
    $("#progress-box").hidden = false;
    $("#progress").classList.remove("failed");
    set(from, message);
  },
  upload(sent, total, resumedFrom) {
    const percent = total > 0 ? sent / total : 1;
    const mb = (bytes) => (bytes / 1e6).toFixed(1);
    const resumed = resumedFrom > 0 ? ` (resumed at ${mb(resumedFrom)} MB)` : "";
    set(percent * UPLOAD_SHARE, `Uploading: ${mb(sent)} of ${mb(total)} MB${resumed}`);
  },
  job(status) {
    const message = status.message || status.status;
    set(UPLOAD_SHARE + (status.progress || 0) * (100 - UPLOAD_SHARE) / 100, message);
  },
  failed(message) {
    $("#progress").classList.add("failed");
    $("#stage").textContent = message;
  },
  get share() { return UPLOAD_SHARE; },
};
