// Waiting for a model server to become ready: its health path polled until 200, bounded by the start timeout.
import { isFlashError } from "../../flash-error.js";
import { sleep } from "../../http/retry.js";
import { nodeTransport } from "../../http/wire.js";
import type { ServerProcess } from "./process.js";

/** Between two health checks; a server loading a model answers 503 (vLLM) or refuses connections until it listens. */
const POLL_MS = 250;
/** One health check may hang (a stuck server) at most this long; the start timeout still bounds the whole wait. */
const CHECK_TIMEOUT_MS = 5000;

export type Health = { ok: true; ms: number } | { ok: false; reason: string };

/**
 * Polls `url` until it answers 200; fails when the process exits first, when `timeoutMs` passes (a hung health
 * endpoint or a server that never listens), or when `stop` aborts (the worker is shutting down).
 */
export async function waitUntilHealthy(
  proc: ServerProcess,
  url: string,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<Health> {
  const started = performance.now();
  const deadline = started + timeoutMs;
  const quit = new AbortController();
  const exited = proc.exited.then((exit) => {
    quit.abort();
    return exit;
  });
  const onStop = () => quit.abort();
  stop?.addEventListener("abort", onStop, { once: true });
  let last = "no answer yet";
  try {
    while (!quit.signal.aborted) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      const checkMs = Math.min(CHECK_TIMEOUT_MS, Math.ceil(left));
      try {
        const { response } = await nodeTransport({
          method: "GET",
          url,
          headers: {},
          timeoutMs: checkMs,
          signal: quit.signal,
        });
        if (response.status === 200) return { ok: true, ms: performance.now() - started };
        last = `it answered ${response.status}`;
      } catch (err) {
        // A check cut short by the deadline, after the server did answer, says nothing new: that answer stands.
        const cutShort =
          isFlashError(err, "HTTP_TIMEOUT") && checkMs < CHECK_TIMEOUT_MS && last.startsWith("it answered");
        if (!quit.signal.aborted && !cutShort) last = (err as Error).message;
      }
      await sleep(Math.min(POLL_MS, Math.max(0, deadline - performance.now())), quit.signal);
    }
    if (proc.exit) return { ok: false, reason: `it ${proc.describe(await exited)}` };
    if (stop?.aborted) return { ok: false, reason: "the worker is shutting down" };
    return {
      ok: false,
      reason: `${url} did not answer 200 within ${timeoutMs / 1000} s (last: ${last}); raise RUNPOD_INIT_TIMEOUT if it needs longer`,
    };
  } finally {
    stop?.removeEventListener("abort", onStop);
  }
}
