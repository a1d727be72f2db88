// A resumable upload (tus 1.0) through XMLHttpRequest PATCHes, for their upload progress.
// The upload's URL is kept in localStorage under the file's identity (name, size, modified time)
// with the fields it was started with, so after a reload or a dropped connection the same file
// resumes from the server's offset whatever the form says now. A dropped connection is retried
// with backoff, and at once when the browser is back online; starting another file first cancels
// the stale upload on the server, so it stops holding the account's place.
import { authHeaders, xhrError, ApiError } from "./api.js";

const TUS = { "Tus-Resumable": "1.0.0" };
const STORE = "moments.upload.";
/// Seconds between attempts after a dropped connection (the last repeats), and how long to keep trying.
const BACKOFF = [1, 2, 4, 8, 15, 30];
const GIVE_UP_AFTER_MS = 15 * 60 * 1000;
/// A saved upload marked this recently is being sent by another tab: it is not stale.
const LIVE_MS = 60 * 1000;

function b64(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function identity(file) {
  return STORE + JSON.stringify([file.name, file.size, file.lastModified]);
}

/// Uploads this browser started and has not finished: [{ key, name, size, url, fields }].
export function savedUploads() {
  const saved = [];
  for (const key of Object.keys(localStorage)) {
    if (!key.startsWith(STORE)) continue;
    try {
      const value = JSON.parse(localStorage.getItem(key));
      if (value && typeof value.url === "string") saved.push({ key, ...value });
      else localStorage.removeItem(key);
    } catch { localStorage.removeItem(key); }
  }
  return saved.sort((a, b) => (b.at || 0) - (a.at || 0));
}

/// Cancels a saved upload on the server (its place is freed) and forgets it.
export async function discard(saved) {
  localStorage.removeItem(saved.key);
  await request("DELETE", saved.url).catch(() => null);
}

/// Chunks small enough to report progress and lose little on a drop, large enough to be cheap.
function chunkSize(size) {
  return Math.min(16 << 20, Math.max(256 << 10, Math.ceil(size / 8)));
}

function request(method, url, headers, body, onProgress, signal) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [name, value] of Object.entries({ ...TUS, ...authHeaders(headers) })) xhr.setRequestHeader(name, value);
    if (onProgress) xhr.upload.onprogress = (event) => onProgress(event.loaded);
    xhr.onload = () => resolve(xhr);
    xhr.onerror = () => reject(new ApiError(0, { detail: "The connection dropped during the upload." }));
    xhr.onabort = xhr.onerror;
    signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(body ?? null);
  });
}

/// The server's state of a stored upload: its offset and length, and its job once it made one;
/// null when it is gone (expired, cancelled, unknown).
export async function stateOf(url) {
  const xhr = await request("HEAD", url);
  if (xhr.status !== 200) return null;
  const offset = Number(xhr.getResponseHeader("Upload-Offset"));
  if (!Number.isSafeInteger(offset)) return null;
  const length = Number(xhr.getResponseHeader("Upload-Length"));
  return { offset, length: Number.isSafeInteger(length) ? length : null, job: xhr.getResponseHeader("Moments-Job-Id") };
}

function finished(storeKey, job) {
  localStorage.removeItem(storeKey);
  return job;
}

const stopped = () => new DOMException("The upload was cancelled.", "AbortError");

/// Waits `seconds` (or until the browser is back online, when it is offline), telling `control`
/// so the page can show "Reconnecting…" with Retry now and Cancel; `control.retryNow()` ends the
/// wait early, the signal cancels.
function pause(seconds, control) {
  return new Promise((resolve, reject) => {
    const offline = navigator.onLine === false;
    let timer = null;
    const done = (error) => {
      clearTimeout(timer);
      window.removeEventListener("online", onOnline);
      control.signal?.removeEventListener("abort", onAbort);
      control.retryNow = () => {};
      if (error) reject(error); else resolve();
    };
    const onOnline = () => done();
    const onAbort = () => done(stopped());
    if (control.signal?.aborted) return done(stopped());
    window.addEventListener("online", onOnline);
    control.signal?.addEventListener("abort", onAbort);
    control.retryNow = () => done();
    if (!offline) timer = setTimeout(() => done(), seconds * 1000);
    control.waiting?.({ offline, seconds });
  });
}

/// Uploads `file`; resolves with `{ job, fields, resumed }`: the job id, the fields the upload
/// was started with (a resumed one keeps its own), and whether it resumed.
/// `progress(sent, total, resumedFrom)`; `control` = { signal, waiting({ offline, seconds }) }.
export async function upload(file, fields, progress, control = {}) {
  const storeKey = identity(file);
  let saved = null;
  try { saved = JSON.parse(localStorage.getItem(storeKey)); } catch { saved = null; }
  const stored = saved?.url ? await stateOf(saved.url).catch(() => null) : null;
  if (stored?.job) return { job: finished(storeKey, stored.job), fields: saved.fields || fields, resumed: true };
  let url = stored ? saved.url : null;
  let offset = stored?.offset ?? null;
  const used = stored ? saved.fields || fields : fields;
  if (offset == null) {
    // Anything else this browser left half-sent holds the account's place: cancel it first (not
    // one another tab is still sending: it marks itself at every part it sends).
    for (const other of savedUploads()) if (!(Date.now() - (other.at || 0) < LIVE_MS)) await discard(other);
    const metadata = [["filename", file.name], ...Object.entries(fields)]
      .map(([name, value]) => `${name} ${b64(String(value))}`).join(",");
    const xhr = await request("POST", "/api/v1/uploads", { "Upload-Length": String(file.size), "Upload-Metadata": metadata });
    if (xhr.status !== 201) throw xhrError(xhr);
    url = xhr.getResponseHeader("Location");
    localStorage.setItem(storeKey, JSON.stringify({ url, fields, name: file.name, size: file.size, at: Date.now() }));
    offset = 0;
  }
  const resumedFrom = offset;
  progress(offset, file.size, resumedFrom);
  const size = chunkSize(file.size);
  let failures = 0;
  let failingSince = null;
  const cancel = async () => {
    await discard({ key: storeKey, url });
    throw stopped();
  };
  for (;;) {
    if (control.signal?.aborted) await cancel();
    const end = Math.min(file.size, offset + size);
    let xhr;
    try {
      xhr = await request("PATCH", url, {
        "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream",
      }, file.slice(offset, end), (sent) => progress(offset + sent, file.size, resumedFrom), control.signal);
    } catch (error) {
      if (control.signal?.aborted) await cancel();
      failingSince ??= Date.now();
      if (Date.now() - failingSince > GIVE_UP_AFTER_MS) {
        throw new ApiError(0, { detail: "The connection has been down for a long time. Choose the same file again to resume where it stopped." });
      }
      try {
        await pause(BACKOFF[Math.min(failures++, BACKOFF.length - 1)], control);
      } catch (abort) {
        await cancel();
      }
      const server = await stateOf(url).catch(() => null);
      if (server?.job) return { job: finished(storeKey, server.job), fields: used, resumed: resumedFrom > 0 };
      if (server) offset = server.offset;
      continue;
    }
    if (xhr.status === 409) { // our offset was stale: take the server's
      if (++failures > BACKOFF.length) throw xhrError(xhr);
      const server = await stateOf(url);
      if (server == null) throw xhrError(xhr);
      if (server.job) return { job: finished(storeKey, server.job), fields: used, resumed: resumedFrom > 0 };
      offset = server.offset;
      continue;
    }
    if (xhr.status !== 204) {
      if (xhr.status >= 400 && xhr.status < 500) localStorage.removeItem(storeKey);
      throw xhrError(xhr);
    }
    failures = 0;
    failingSince = null;
    control.waiting?.(null);
    localStorage.setItem(storeKey, JSON.stringify({ url, fields: used, name: file.name, size: file.size, at: Date.now() }));
    offset = Number(xhr.getResponseHeader("Upload-Offset"));
    if (!Number.isSafeInteger(offset)) throw new ApiError(0, { detail: "The server's answer to the upload was not understood." });
    progress(offset, file.size, resumedFrom);
    const job = xhr.getResponseHeader("Moments-Job-Id");
    if (job) return { job: finished(storeKey, job), fields: used, resumed: resumedFrom > 0 };
  }
}
