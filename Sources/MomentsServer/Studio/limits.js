// What the plan allows, said before anything is spent or sent: the plan's limits under the picker,
// the chosen file's length and size (read by the browser, nothing uploaded) with a look at it,
// files over a limit refused before any byte goes out, the length held to the video's, and what a
// highlight or a re-cut uses of the month's quota.
import { $ } from "./dom.js";

let account = null;
let chosenSeconds = null;
let look = null;
let busy = false;
let reading = Promise.resolve();

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;

function clock(seconds) {
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function day(text) {
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date.toLocaleDateString(undefined, { day: "numeric", month: "long" });
}

/// Highlights left this month (null: no cap).
export function left() {
  const usage = account?.usage;
  return usage && usage.limit != null ? Math.max(0, usage.remaining ?? usage.limit - usage.used) : null;
}

/// What one more highlight costs, or why there is none left.
function costText() {
  const remaining = left();
  if (remaining == null) return "";
  if (remaining > 0) return `Uses 1 of your ${remaining} left this month.`;
  const when = day(account.usage.resets_at);
  return `None left this month.${when ? ` More on ${when}` : ""} · Upgrade to Moments Pro for more.`;
}

/// The account changed (sign-in, a refresh after a job): limits and costs are shown again.
export function setAccount(value) {
  account = value;
  const limits = value?.limits;
  $("#limits").textContent = limits
    ? `Your plan takes videos up to ${clock(limits.max_duration_seconds)} long and ${mb(limits.max_upload_bytes)}.`
    : "";
  updateCosts();
}

/// A highlight is being made (Make waits for it) or not.
export function setBusy(yes) {
  busy = yes;
  updateCosts();
}

/// Shows the costs beside Make and the re-cut buttons; at none left they are disabled.
function updateCosts() {
  const text = costText();
  const none = left() === 0;
  $("#make-cost").textContent = text;
  $("#recut-cost").textContent = text;
  $("#make-button").disabled = busy || none;
  $("#recut-apply").disabled = none;
}

/// Reads a chosen file's length in the browser (a hidden player, nothing sent); resolves null when
/// the browser cannot read it (the server judges then).
function readSeconds(file) {
  return new Promise((resolve) => {
    const player = document.createElement("video");
    const url = URL.createObjectURL(file);
    const done = (value) => { URL.revokeObjectURL(url); player.removeAttribute("src"); resolve(value); };
    player.preload = "metadata";
    player.muted = true;
    player.onloadedmetadata = () => done(Number.isFinite(player.duration) ? player.duration : null);
    player.onerror = () => done(null);
    setTimeout(() => done(null), 5000);
    player.src = url;
  });
}

/// A file was chosen: its length, size and first picture; the length field held to its length.
export function describe(file) {
  reading = readFacts(file);
  return reading;
}

/// Resolves once the chosen file's facts are read.
export const described = () => reading;

async function readFacts(file) {
  chosenSeconds = null;
  if (look) URL.revokeObjectURL(look);
  look = null;
  const thumb = $("#chosen-look");
  thumb.hidden = true;
  $("#chosen-facts").textContent = file ? mb(file.size) : "";
  if (!file) return;
  const seconds = await readSeconds(file);
  chosenSeconds = seconds;
  $("#chosen-facts").textContent = seconds != null ? `${clock(seconds)} · ${mb(file.size)}` : mb(file.size);
  if (seconds != null) {
    look = URL.createObjectURL(file);
    thumb.src = `${look}#t=${Math.min(1, seconds / 2)}`;
    thumb.hidden = false;
    const length = $("#length");
    const longest = Math.max(5, Math.min(180, Math.floor(seconds)));
    length.max = String(longest);
    // Never under the person's fingers: a field being typed in is left alone (Make checks it).
    if (Number(length.value) > longest && document.activeElement !== length) length.value = String(longest);
  }
}

/// Why `file` cannot be sent on this plan, or null.
export function refusal(file) {
  const limits = account?.limits;
  if (!limits || !file) return null;
  if (file.size > limits.max_upload_bytes) {
    return `This file is ${mb(file.size)}; your plan takes files up to ${mb(limits.max_upload_bytes)}. Choose a shorter or smaller video.`;
  }
  if (chosenSeconds != null && chosenSeconds > limits.max_duration_seconds + 0.5) {
    return `This video is ${clock(chosenSeconds)} long; your plan takes videos up to ${clock(limits.max_duration_seconds)}. Trim it first, or upgrade to Moments Pro.`;
  }
  return null;
}

/// The longest highlight this video allows (null when its length is unknown).
export const longestFor = () => (chosenSeconds != null ? Math.max(5, Math.floor(chosenSeconds)) : null);
