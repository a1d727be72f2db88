// The original's timeline: the chosen segments, and the moments to keep in or cut out of a
// re-cut. A tap (or the arrow keys) picks a moment, shown with its time; "Keep this moment" and
// "Cut this moment" (or Enter, which keeps) mark it; the same mark is never made twice.
import { $, el, seconds } from "./dom.js";

const EXCLUDE_HALF = 1;
let duration = 0;
let cursor = 0;
let pins = [];
let excluded = [];

export function initTimeline() {
  const bar = $("#timeline");
  const at = (event) => {
    const box = bar.getBoundingClientRect();
    return box.width > 0 && duration > 0 ? ((event.clientX - box.left) / box.width) * duration : null;
  };
  bar.addEventListener("click", (event) => {
    const time = at(event);
    if (time == null) return;
    moveTo(time);
    preview(time);
  });
  bar.addEventListener("keydown", (event) => {
    const step = event.shiftKey ? 5 : 1;
    const moves = { ArrowLeft: -step, ArrowDown: -step, ArrowRight: step, ArrowUp: step, Home: -duration, End: duration };
    if (event.key in moves) {
      moveTo(cursor + moves[event.key]);
    } else if (event.key === "Enter" || event.key === " ") {
      keep();
    } else {
      return;
    }
    event.preventDefault();
  });
  // The re-cut offers the same shapes as the upload form.
  $("#recut-aspect").replaceChildren(...[...$("#aspect").options].map((o) => o.cloneNode(true)));
  $("#keep-moment").addEventListener("click", keep);
  $("#cut-moment").addEventListener("click", cut);
}

function moveTo(time) {
  cursor = Math.round(Math.min(duration, Math.max(0, time)) * 10) / 10;
  const bar = $("#timeline");
  bar.setAttribute("aria-valuenow", String(cursor));
  bar.setAttribute("aria-valuetext", seconds(cursor));
  bar.querySelector(".cursor").style.left = `${duration ? (cursor / duration) * 100 : 0}%`;
  $("#cursor-time").textContent = seconds(cursor);
}

/// A tap on a chosen moment plays it in the highlight (where that moment is in the clip).
function preview(time) {
  let offset = 0;
  for (const s of [...segments].sort((a, b) => a.start - b.start)) {
    if (time >= s.start && time <= s.end) {
      const player = $("#player");
      player.currentTime = offset + (time - s.start);
      player.play().catch(() => {});
      return;
    }
    offset += s.end - s.start;
  }
}

/// Keeps the moment at the cursor in the re-cut (once).
function keep() {
  if (duration > 0 && !pins.includes(cursor)) pins.push(cursor);
  draw();
}

/// Cuts 2 s around the cursor out of the re-cut; a moment already cut is not cut again.
function cut() {
  const start = Math.round(Math.max(0, cursor - EXCLUDE_HALF) * 10) / 10;
  const end = Math.round(Math.min(duration, cursor + EXCLUDE_HALF) * 10) / 10;
  if (end > start && !excluded.some(([a, b]) => a <= cursor && cursor <= b)) excluded.push([start, end]);
  draw();
}

function block(className, start, end, label) {
  const part = el("div", null, className);
  part.style.left = `${(start / duration) * 100}%`;
  part.style.width = `${Math.max(0.4, ((end - start) / duration) * 100)}%`;
  part.title = label;
  return part;
}

let segments = [];

function draw() {
  const bar = $("#timeline");
  for (const old of bar.querySelectorAll(".segment, .pin, .excluded")) old.remove();
  if (duration <= 0) return;
  segments.forEach((s, i) => bar.append(block("segment", s.start, s.end, `Moment ${i + 1}: ${seconds(s.start)}–${seconds(s.end)}`)));
  excluded.forEach(([start, end]) => bar.append(block("excluded", start, end, `Cut: ${seconds(start)}–${seconds(end)}`)));
  pins.forEach((time) => bar.append(block("pin", time, time, `Kept: ${seconds(time)}`)));

  const list = $("#marks");
  list.replaceChildren();
  const item = (text, remove) => {
    const li = el("li", text);
    const button = el("button", "Remove");
    button.type = "button";
    button.setAttribute("aria-label", `Remove: ${text}`);
    button.addEventListener("click", () => { remove(); draw(); $("#timeline").focus(); });
    li.append(" ", button);
    list.append(li);
  };
  pins.forEach((time, i) => item(`Kept ${seconds(time)}`, () => pins.splice(i, 1)));
  excluded.forEach(([start, end], i) => item(`Cut ${seconds(start)}–${seconds(end)}`, () => excluded.splice(i, 1)));
}

/// The storyboard's filmstrip row as the timeline's background (the row spans 0 s to the
/// original's duration, as the timeline does); none when the job has no storyboard.
function showFilmstrip(frame, url) {
  const bar = $("#timeline");
  const f = frame?.filmstrip;
  const fits = url && f && f.width > 0 && f.height > 0 && frame.width > f.width && frame.height > f.height;
  bar.classList.toggle("filmstrip", Boolean(fits));
  if (!fits) {
    bar.style.backgroundImage = bar.style.backgroundSize = bar.style.backgroundPosition = "";
    return;
  }
  bar.style.backgroundImage = `url("${url.replace(/["\\\n]/g, encodeURIComponent)}")`;
  bar.style.backgroundSize = `${(frame.width / f.width) * 100}% ${(frame.height / f.height) * 100}%`;
  bar.style.backgroundPosition =
    `${(f.x / (frame.width - f.width)) * 100}% ${(f.y / (frame.height - f.height)) * 100}%`;
}

/// Shows a job's original with its segments and its own pins and exclusions, over the
/// storyboard's filmstrip (`storyboard`: the picture's link) where there is one.
export function showTimeline(job, storyboard) {
  showFilmstrip(job.output?.storyboard, storyboard);
  duration = job.input?.duration || 0;
  segments = (job.segments || []).filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end));
  pins = [...(job.parameters?.include || [])];
  excluded = (job.parameters?.exclude || []).map((r) => Array.isArray(r) ? r : [r.start, r.end]);
  $("#timeline").setAttribute("aria-valuemax", String(Math.round(duration * 10) / 10));
  $("#timeline-end").textContent = seconds(duration);
  // The re-cut starts from this highlight's shape and length.
  $("#recut-aspect").value = job.parameters?.aspect || "source";
  $("#recut-length").value = String(job.parameters?.target_duration || 30);
  moveTo(0);
  draw();
}

/// The marks as a re-cut's include and exclude.
export function marks() {
  return { include: [...pins].sort((a, b) => a - b), exclude: excluded.map((r) => [...r]) };
}
