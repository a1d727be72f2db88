// Follows a job to its end: server-sent events from GET …/events read through fetch (EventSource
// cannot send the key), falling back to polling GET …/status when the stream is not available.
import { authHeaders, call, jobPath } from "./api.js";

const FINAL = new Set(["completed", "failed", "cancelled"]);
const POLL_MS = 1000;

/// Resolves with the final status; `update(status)` gets every state on the way.
export async function follow(id, update, signal) {
  try {
    const last = await stream(id, update, signal);
    if (last && FINAL.has(last.status)) return last;
  } catch (error) {
    if (signal?.aborted) throw error;
  }
  return poll(id, update, signal);
}

async function stream(id, update, signal) {
  const response = await fetch(jobPath(id, "/events"), { headers: authHeaders({ Accept: "text/event-stream" }), signal });
  if (!response.ok || !response.body) return null;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let last = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim()).join("\n");
      if (!data) continue;
      try { last = JSON.parse(data); } catch { continue; }
      update(last);
      if (FINAL.has(last.status)) {
        reader.cancel().catch(() => {});
        return last;
      }
    }
  }
}

async function poll(id, update, signal) {
  for (;;) {
    if (signal?.aborted) throw new DOMException("stopped", "AbortError");
    const status = await call("GET", jobPath(id, "/status"));
    update(status);
    if (FINAL.has(status.status)) return status;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
