// The one retry loop: attempts, exponential waits with jitter, and a caller's say on what is worth another try.

/** Waits doubling from `baseMs` up to `maxMs`, each drawn between half of that and all of it (backoffMs). */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/** How a call is retried: `attempts` in total, with the waits of its Backoff. */
export interface RetryPolicy extends Backoff {
  attempts: number;
}

/** Numbers in [0, 1): Math.random, or a test's own to pin the waits. */
export type RandomSource = () => number;

/** Worker progress posts (best effort): waits of up to 1, 2, 4, 8 s, so an update gives up within ~15 s of failures. */
export const PROGRESS_RETRY: RetryPolicy = { attempts: 5, baseMs: 1000, maxMs: 8000 };

/**
 * Worker result and stream posts: waits from 1 s doubling to 30 s, with no count; the caller bounds them with a
 * deadline (the delivery limit) and a signal (the shutdown grace), since a computed result must not be given up early.
 */
export const DELIVERY_RETRY: RetryPolicy = {
  attempts: Number.POSITIVE_INFINITY,
  baseMs: 1000,
  maxMs: 30_000,
};

/** Worker heartbeat: waits of up to 0.5 s then 1 s, at most 1.5 s in all, well inside one ping interval (urllib3's Retry(3)). */
export const PING_RETRY: RetryPolicy = { attempts: 3, baseMs: 500, maxMs: 1000 };

/** Client calls on connection failures: waits of up to 0.5 s then 1 s, so a call gives up within 1.5 s of refusals. */
export const CONNECT_RETRY: RetryPolicy = { attempts: 3, baseMs: 500, maxMs: 10_000 };

/** Artifact uploads: waits of up to 2 s then 4 s, at most 6 s in all (base 2 s, max 30 s as the toolkit has it). */
export const UPLOAD_RETRY: RetryPolicy = { attempts: 3, baseMs: 2_000, maxMs: 30_000 };

/** Webhook deliveries: 2 more tries at most 10 s apart, at most 20 s in all (the platform's policy). */
export const WEBHOOK_RETRY: RetryPolicy = { attempts: 3, baseMs: 10_000, maxMs: 10_000 };

/** Status polls: 250 ms doubling to 5 s while nothing changes; never gives up by itself (the caller's deadline does). */
export const POLL_BACKOFF: RetryPolicy = { attempts: Number.POSITIVE_INFINITY, baseMs: 250, maxMs: 5_000 };

/**
 * The wait after the `failedAttempts`-th failure: the doubled wait less up to half of it at random ("equal
 * jitter"), so a fleet that failed together does not retry in lockstep, and no wait is under half its share.
 */
export function backoffMs(
  backoff: Backoff,
  failedAttempts: number,
  random: RandomSource = Math.random,
): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** (failedAttempts - 1));
  return Math.round(ceiling - (ceiling / 2) * random());
}

/** What one attempt came to: a value, or what it threw. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Why an outcome deserves another attempt, or undefined when it stands as the answer. */
export type Classify<T> = (outcome: Outcome<T>) => string | undefined;

export interface RetryOptions<T> {
  /** Told before each wait, e.g. to log it, with the outcome that wants the retry. */
  onRetry?: (reason: string, attempt: number, waitMs: number, outcome: Outcome<T>) => void;
  /** The last attempt still wanted a retry (or `signal` ended the waits): its answer, or throw. Default: the outcome as it was. */
  exhausted?: (reason: string, attempts: number, outcome: Outcome<T>) => T;
  /** Aborting ends a wait early and gives up. */
  signal?: AbortSignal;
  /** No wait that would end after this time (Date.now() ms) is begun: the attempts give up instead. */
  deadline?: number;
  /** The waits' jitter (Math.random by default). */
  random?: RandomSource;
}

/** Runs `fn` until `classify` accepts its outcome or the policy's attempts are spent. */
export async function withRetry<T>(
  policy: RetryPolicy,
  fn: (attempt: number) => Promise<T>,
  classify: Classify<T>,
  options: RetryOptions<T> = {},
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let outcome: Outcome<T>;
    try {
      outcome = { ok: true, value: await fn(attempt) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    const reason = classify(outcome);
    if (reason === undefined) return settle(outcome);
    const waitMs = backoffMs(policy, attempt, options.random);
    const pastDeadline = options.deadline !== undefined && Date.now() + waitMs > options.deadline;
    if (attempt >= policy.attempts || options.signal?.aborted || pastDeadline) {
      return options.exhausted ? options.exhausted(reason, attempt, outcome) : settle(outcome);
    }
    options.onRetry?.(reason, attempt, waitMs, outcome);
    await sleep(waitMs, options.signal);
    if (options.signal?.aborted) {
      return options.exhausted ? options.exhausted(reason, attempt, outcome) : settle(outcome);
    }
  }
}

function settle<T>(outcome: Outcome<T>): T {
  if (outcome.ok) return outcome.value;
  throw outcome.error;
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
