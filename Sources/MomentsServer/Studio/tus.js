// A resumable upload (tus 1.0) through XMLHttpRequest PATCHes, for their upload progress.
// The upload's URL is kept in localStorage under the file's identity and the chosen fields, so a
// reload or a dropped connection resumes from the server's offset when the same file is chosen.
import { authHeaders, xhrError, ApiError } from "./api.js";

const TUS = { "Tus-Resumable": "1.0.0" };
const STORE = "moments.upload.";
const RETRIES = 3;

function b64(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function identity(file, fields) {
  return STORE + JSON.stringify([file.name, file.size, file.lastModified, fields]);
}

/// Chunks small enough to report progress and lose little on a drop, large enough to be cheap.
function chunkSize(size) {
  return Math.min(16 << 20, Math.max(256 << 10, Math.ceil(size / 8)));
}

function request(method, url, headers, body, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(method, url);
    for (const [name, value] of Object.entries({ ...TUS, ...authHeaders(headers) })) xhr.setRequestHeader(name, value);
    if (onProgress) xhr.upload.onprogress = (event) => onProgress(event.loaded);
    xhr.onload = () => resolve(xhr);
    xhr.onerror = () => reject(new ApiError(0, { detail: "The connection dropped during the upload." }));
    xhr.onabort = xhr.onerror;
    xhr.send(body ?? null);
  });
}

async function create(file, fields) {
  const metadata = [["filename", file.name], ...Object.entries(fields)]
    .map(([name, value]) => `${name} ${b64(String(value))}`).join(",");
  const xhr = await request("POST", "/api/v1/uploads", { "Upload-Length": String(file.size), "Upload-Metadata": metadata });
  if (xhr.status !== 201) throw xhrError(xhr);
  return xhr.getResponseHeader("Location");
}

/// The server's state of a stored upload: its offset, and its job once it made one; null when it
/// is gone (expired, cancelled, unknown).
async function stateOf(url) {
  const xhr = await request("HEAD", url);
  if (xhr.status !== 200) return null;
  const offset = Number(xhr.getResponseHeader("Upload-Offset"));
  if (!Number.isSafeInteger(offset)) return null;
  return { offset, job: xhr.getResponseHeader("Moments-Job-Id") };
}

function finished(storeKey, job) {
  localStorage.removeItem(storeKey);
  return job;
}

/// Uploads `file`; resolves with the job id. `progress(sent, total, resumedFrom)`.
export async function upload(file, fields, progress) {
  const storeKey = identity(file, fields);
  let url = localStorage.getItem(storeKey);
  const stored = url ? await stateOf(url).catch(() => null) : null;
  if (stored?.job) return finished(storeKey, stored.job); // it had finished when the page went away
  let offset = stored?.offset ?? null;
  if (offset == null) {
    url = await create(file, fields);
    localStorage.setItem(storeKey, url);
    offset = 0;
  }
  const resumedFrom = offset;
  progress(offset, file.size, resumedFrom);
  const size = chunkSize(file.size);
  let failures = 0;
  for (;;) {
    const end = Math.min(file.size, offset + size);
    let xhr;
    try {
      xhr = await request("PATCH", url, {
        "Upload-Offset": String(offset), "Content-Type": "application/offset+octet-stream",
      }, file.slice(offset, end), (sent) => progress(offset + sent, file.size, resumedFrom));
    } catch (error) {
      if (++failures > RETRIES) throw new ApiError(0, { detail: "The connection dropped during the upload. Choose the same file again to resume where it stopped." });
      await new Promise((resolve) => setTimeout(resolve, 500 * failures));
      const server = await stateOf(url).catch(() => null);
      if (server?.job) return finished(storeKey, server.job); // the answer was lost, not the upload
      if (server) offset = server.offset;
      continue;
    }
    if (xhr.status === 409) { // our offset was stale: take the server's
      if (++failures > RETRIES) throw xhrError(xhr);
      const server = await stateOf(url);
      if (server == null) throw xhrError(xhr);
      if (server.job) return finished(storeKey, server.job);
      offset = server.offset;
      continue;
    }
    if (xhr.status !== 204) {
      if (xhr.status >= 400 && xhr.status < 500) localStorage.removeItem(storeKey);
      throw xhrError(xhr);
    }
    failures = 0;
    offset = Number(xhr.getResponseHeader("Upload-Offset"));
    if (!Number.isSafeInteger(offset)) throw new ApiError(0, { detail: "The server's answer to the upload was not understood." });
    progress(offset, file.size, resumedFrom);
    const job = xhr.getResponseHeader("Moments-Job-Id");
    if (job) return finished(storeKey, job);
  }
}
