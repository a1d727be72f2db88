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
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function day(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleDateString(undefined, { day: "numeric", month: "short" });
}

const SHAPES = { source: "as filmed", "16:9": "16:9", "9:16": "9:16", "1:1": "1:1", "4:5": "4:5" };

function action(label, name, run) {
  const button = el("button", label);
  button.type = "button";
  button.setAttribute("aria-label", `${label} ${name}`);
  button.addEventListener("click", run);
  return button;
}

/// "20 s · 9:16 · re-cut of holiday.mp4 · kept until 5 Dec": what tells one row from another.
function facts(job, names) {
  const parts = [`${Math.round(job.duration ?? job.target_duration)} s`, SHAPES[job.aspect] || job.aspect];
  if (job.recut_of) parts.push(`re-cut of ${names.get(job.recut_of) || "an earlier highlight"}`);
  if (job.kept_until) parts.push(`kept until ${day(job.kept_until)}`);
  return parts.join(" · ");
}

function item(job, index, names) {
  const li = el("li");
  li.dataset.job = job.job_id;
  li.dataset.status = job.status;
  const title = job.source_name || `Highlight ${index + 1}`;
  if (job.status === "completed" && job.result_url) {
    const poster = el("img", null, "job-poster");
    poster.alt = "";
    poster.hidden = true;
    li.append(poster);
  }
  const name = `${title} (${when(job.created_at)})`;
  const head = el("div", null, "job-head");
  head.append(el("strong", title), el("span", job.status, `status ${job.status}`));
  if (currentJob()?.job_id === job.job_id) {
    li.setAttribute("aria-current", "true");
    head.append(el("span", "Now showing", "showing"));
  }
  li.append(head, el("p", `${facts(job, names)} · made ${when(job.created_at)}`, "job-facts"));
  if (job.status !== "completed") li.append(el("p", job.message || "", "job-message"));
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
  else {
    // Deleting asks first: the video cannot be brought back.
    const confirm = el("div", null, "confirm");
    confirm.hidden = true;
    confirm.append(el("span", "Delete this highlight's video for good?"), action("Delete for good", name, remove),
      action("Keep", name, () => { confirm.hidden = true; ask.focus(); }));
    const ask = action("Delete", name, () => { confirm.hidden = false; confirm.querySelector("button").focus(); });
    buttons.append(ask);
    li.append(buttons, confirm);
    return li;
  }
  li.append(buttons);
  return li;
}

export async function refreshHistory() {
  try {
    const list = await call("GET", "/api/v1/jobs?limit=20");
    // A highlight whose media are gone has nothing left to show: its row goes.
    const jobs = (list.jobs || []).filter((job) => !(job.status === "completed" && !job.result_url));
    const names = new Map((list.jobs || []).map((job) => [job.job_id, job.source_name]));
    $("#jobs").replaceChildren(...jobs.map((job, index) => item(job, index, names)));
    showPosters();
    $("#no-jobs").hidden = jobs.length > 0;
    $("#history").hidden = false;
  } catch (error) {
    showError("history-error", error);
  }
}

const POSTERS = 6;
const posterLinks = new Map();

/// The poster of each of the first finished rows, through a signed media link (kept for the page's
/// life: a link lasts an hour, and a failed picture simply stays hidden).
async function showPosters() {
  const rows = [...document.querySelectorAll("#jobs li[data-status=completed]")].slice(0, POSTERS);
  await Promise.all(rows.map(async (row) => {
    const img = row.querySelector(".job-poster");
    if (!img) return;
    try {
      if (!posterLinks.has(row.dataset.job)) {
        const links = await call("GET", jobPath(row.dataset.job, "/media-links"));
        const url = new URL(links.poster, location.href);
        posterLinks.set(row.dataset.job, url.pathname + url.search);
      }
      img.onload = () => { img.hidden = false; };
      img.onerror = () => { img.hidden = true; };
      img.src = posterLinks.get(row.dataset.job);
    } catch { /* no poster: the row reads without it */ }
  }));
}
