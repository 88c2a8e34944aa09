// The long-poll the platform holds requests open with (job-take, job-stop, /stream, ?wait=).
/**
 * Holds a request open until `start`'s callback delivers a value, the wait ends, or a signal aborts
 * (client gone or platform closing); the last two resolve to `fallback`. `start` returns its cleanup.
 */
export function longPoll<T>(
  waitMs: number,
  signals: readonly AbortSignal[],
  fallback: T,
  start: (deliver: (value: T) => void) => () => void,
): Promise<T> {
  if (signals.some((s) => s.aborted)) return Promise.resolve(fallback);
  return new Promise<T>((resolve) => {
    let done = false;
    let cleanup: () => void = () => {};
    const finish = (value: T) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener("abort", onAbort);
      cleanup();
      resolve(value);
    };
    const onAbort = () => finish(fallback);
    const timer = setTimeout(onAbort, waitMs);
    for (const s of signals) s.addEventListener("abort", onAbort, { once: true });
    cleanup = start(finish);
    if (done) cleanup();
  });
}
