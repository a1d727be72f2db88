// "Your highlights": the account's jobs, newest first, with open, cancel and delete.
import { call, jobPath } from "./api.js";
import { $, el, showError } from "./dom.js";
import { currentJob } from "./result.js";

const ACTIVE = new Set(["pending", "processing"]);
let handlers = { open: () => {}, changed: () => {} };

export function initHistory(open, changed) {
  handlers = { open, changed };
}

function when(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
}

function action(label, name, run) {
  const button = el("button", label);
  button.type = "button";
  button.setAttribute("aria-label", `${label} ${name}`);
  button.addEventListener("click", run);
  return button;
}

function item(job, index) {
  const li = el("li");
  li.dataset.job = job.job_id;
  const deleted = job.status === "completed" && !job.result_url;
  const status = deleted ? "deleted" : job.status;
  li.dataset.status = status;
  const name = `highlight ${index + 1} (${when(job.created_at)})`;
  const head = el("div", null, "job-head");
  head.append(el("strong", when(job.created_at)), el("span", status, `status ${status}`));
  if (currentJob()?.job_id === job.job_id) {
    li.setAttribute("aria-current", "true");
    head.append(el("span", "Now showing", "showing"));
  }
  li.append(head, el("p", deleted ? "Its media were deleted." : job.message || "", "job-message"));
  const buttons = el("div", null, "actions");
  if (job.status === "completed" && job.result_url) buttons.append(action("Open", name, () => handlers.open(job.job_id)));
  if (ACTIVE.has(job.status)) buttons.append(action("Follow", name, () => handlers.open(job.job_id)));
  const remove = async () => {
    showError("history-error");
    try {
      await call("DELETE", jobPath(job.job_id));
      handlers.changed(job.job_id);
    } catch (error) { showError("history-error", error); }
    await refreshHistory();
  };
  if (ACTIVE.has(job.status)) buttons.append(action("Cancel", name, remove));
  else if (!deleted) buttons.append(action("Delete", name, remove));
  li.append(buttons);
  return li;
}

export async function refreshHistory() {
  try {
    const list = await call("GET", "/api/v1/jobs?limit=20");
    const jobs = list.jobs || [];
    $("#jobs").replaceChildren(...jobs.map(item));
    $("#no-jobs").hidden = jobs.length > 0;
    $("#history").hidden = false;
  } catch (error) {
    showError("history-error", error);
  }
}
