// The API with the account's key: JSON calls, problem+json as ApiError, media as blob URLs.
import { plainWords } from "./words.js";

const KEY = "moments.key";

export class ApiError extends Error {
  constructor(status, problem) {
    const code = problemCode(problem);
    super(plainWords(status, code, problem) || problem.detail || problem.title || "Something went wrong. Try again.");
    this.status = status;
    this.code = code;
  }
}

function problemCode(problem) {
  const type = typeof problem.type === "string" ? problem.type : "";
  return problem.code || type.slice(type.lastIndexOf("/") + 1);
}

export const key = {
  get: () => localStorage.getItem(KEY),
  set: (value) => localStorage.setItem(KEY, value),
  /// Forgets the key and everything kept with it (uploads to resume, the job being followed).
  forget: () => {
    for (const name of Object.keys(localStorage)) if (name.startsWith("moments.")) localStorage.removeItem(name);
  },
};

export function authHeaders(extra = {}) {
  const value = key.get();
  return value ? { Authorization: `Bearer ${value}`, ...extra } : extra;
}

/// A problem from a response (problem+json or not), as an ApiError.
export async function errorOf(response) {
  let problem = {};
  try { problem = await response.json(); } catch { /* not JSON */ }
  return new ApiError(response.status, problem);
}

/// Parses an XHR's problem+json body.
export function xhrError(xhr) {
  let problem = {};
  try { problem = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
  return new ApiError(xhr.status, problem);
}

export async function call(method, path, body) {
  const init = { method, headers: authHeaders({ Accept: "application/json" }) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, { detail: "The server cannot be reached. Check the connection and try again." });
  }
  if (!response.ok) throw await errorOf(response);
  return response.status === 204 ? null : response.json();
}

/// A protected file as a blob: URL (the key goes in a header, which <video src> cannot send).
export async function blobURL(path) {
  const response = await fetch(path, { headers: authHeaders() });
  if (!response.ok) throw await errorOf(response);
  return URL.createObjectURL(await response.blob());
}

export const jobPath = (id, rest = "") => `/api/v1/jobs/${encodeURIComponent(id)}${rest}`;
