/** How a request is retried: `attempts` in total, waits doubling from `baseMs` up to `maxMs`. */
export interface RetryPolicy {
  attempts: number;
  baseMs: number;
  maxMs: number;
}

/** Result, stream and progress posts: waits of 1, 2, 4, 8 s, so a post gives up after ~15 s of failures. */
export const RESULT_RETRY: RetryPolicy = { attempts: 5, baseMs: 1000, maxMs: 8000 };

/** Heartbeat: 3 tries 0.5 s and 1 s apart, well inside one ping interval (urllib3's Retry(3) in runpod-python). */
export const PING_RETRY: RetryPolicy = { attempts: 3, baseMs: 500, maxMs: 1000 };

export function backoffMs(policy: RetryPolicy, failedAttempts: number): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** (failedAttempts - 1));
}

/** Waits, ending early (without throwing) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
