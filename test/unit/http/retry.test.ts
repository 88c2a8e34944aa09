// withRetry and the named policies, on vitest's fake clock: the waits are what the comments state, each drawn
// between half its share and all of it (pinned here by an injected random source).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  backoffMs,
  CONNECT_RETRY,
  DELIVERY_RETRY,
  type Outcome,
  PING_RETRY,
  POLL_BACKOFF,
  PROGRESS_RETRY,
  type RetryPolicy,
  sleep,
  UPLOAD_RETRY,
  WEBHOOK_RETRY,
  withRetry,
} from "../../../src/http/retry.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** The random source that draws no jitter: each wait is its whole share. */
const NO_JITTER = () => 0;

/** Every wait a policy makes before giving up, summed, with the jitter `random` draws. */
function totalWaitMs(policy: RetryPolicy, random = NO_JITTER): number {
  let total = 0;
  for (let failed = 1; failed < policy.attempts; failed++) total += backoffMs(policy, failed, random);
  return total;
}

const retryErrors = (outcome: Outcome<unknown>) => (outcome.ok ? undefined : String(outcome.error));

describe("named policies", () => {
  it("wait in total at most what their comments say, and at least half of it", () => {
    const justUnder1 = () => 1 - Number.EPSILON;
    for (const [policy, most] of [
      [PROGRESS_RETRY, 15_000],
      [PING_RETRY, 1_500],
      [CONNECT_RETRY, 1_500],
      [UPLOAD_RETRY, 6_000],
      [WEBHOOK_RETRY, 20_000],
    ] as const) {
      expect(totalWaitMs(policy)).toBe(most);
      expect(totalWaitMs(policy, justUnder1)).toBe(most / 2);
    }
  });

  it("deliveries have no attempt count and wait at most 30 s between attempts", () => {
    expect(DELIVERY_RETRY.attempts).toBe(Number.POSITIVE_INFINITY);
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffMs(DELIVERY_RETRY, n, NO_JITTER))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it("cap the doubling at maxMs", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(POLL_BACKOFF, n, NO_JITTER))).toEqual([
      250, 500, 1000, 2000, 4000, 5000, 5000,
    ]);
  });
});

describe("withRetry", () => {
  it("returns the first accepted outcome without waiting", async () => {
    const fn = vi.fn(async () => "ok");
    await expect(withRetry(PROGRESS_RETRY, fn, retryErrors)).resolves.toBe("ok");
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it("waits the policy's backoff between attempts and stops when classify accepts", async () => {
    const waits: number[] = [];
    const reasons: string[] = [];
    let calls = 0;
    const fn = vi.fn(async (attempt: number) => {
      calls++;
      if (attempt < 3) throw new Error(`refused ${attempt}`);
      return attempt;
    });
    const result = withRetry(PROGRESS_RETRY, fn, retryErrors, {
      random: NO_JITTER,
      onRetry: (reason, _attempt, waitMs) => {
        reasons.push(reason);
        waits.push(waitMs);
      },
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toBe(2);
    await vi.advanceTimersByTimeAsync(2000);
    await expect(result).resolves.toBe(3);
    expect(waits).toEqual([1000, 2000]);
    expect(reasons).toEqual(["Error: refused 1", "Error: refused 2"]);
  });

  it("rethrows the last error once the attempts are spent, after exactly the stated total wait", async () => {
    let calls = 0;
    const result = withRetry(
      PING_RETRY,
      async () => {
        calls++;
        throw new Error(`down ${calls}`);
      },
      retryErrors,
      { random: NO_JITTER },
    );
    const settled = result.catch((err: Error) => err.message);
    await vi.advanceTimersByTimeAsync(totalWaitMs(PING_RETRY) - 1);
    expect(calls).toBe(PING_RETRY.attempts - 1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(settled).resolves.toBe("down 3");
    expect(calls).toBe(3);
  });

  it("returns the last value when a retryable answer is never fixed", async () => {
    const result = withRetry(
      CONNECT_RETRY,
      async () => 503,
      (o) => (o.ok && o.value >= 500 ? "5xx" : undefined),
    );
    await vi.runAllTimersAsync();
    await expect(result).resolves.toBe(503);
  });

  it("lets exhausted turn the last outcome into the caller's answer or error", async () => {
    const seen: Array<[string, number]> = [];
    const result = withRetry(
      { attempts: 2, baseMs: 10, maxMs: 10 },
      async () => {
        throw new Error("nope");
      },
      () => "connection refused",
      {
        exhausted: (reason, attempts) => {
          seen.push([reason, attempts]);
          throw new RangeError(`gave up after ${attempts}`);
        },
      },
    );
    const settled = result.catch((err: Error) => `${err.name}: ${err.message}`);
    await vi.runAllTimersAsync();
    await expect(settled).resolves.toBe("RangeError: gave up after 2");
    expect(seen).toEqual([["connection refused", 2]]);
  });

  it("gives up at once when the signal aborts during a wait", async () => {
    const controller = new AbortController();
    let calls = 0;
    const result = withRetry(
      WEBHOOK_RETRY,
      async () => ++calls,
      () => "HTTP 500",
      { signal: controller.signal, exhausted: (_reason, attempts) => -attempts },
    );
    await vi.advanceTimersByTimeAsync(5_000);
    controller.abort();
    await expect(result).resolves.toBe(-1);
    expect(calls).toBe(1);
  });

  it("begins no wait that would end past the deadline, and answers with the last outcome", async () => {
    let calls = 0;
    const fn = async () => {
      calls++;
      throw new Error(`refused ${calls}`);
    };
    // Waits of 1, 2, 4, 8, 16 s end at 1, 3, 7, 15, 31 s: with a 20 s deadline the fifth wait is not begun.
    const result = withRetry(DELIVERY_RETRY, fn, retryErrors, {
      deadline: Date.now() + 20_000,
      random: NO_JITTER,
    });
    const settled = expect(result).rejects.toThrow("refused 5");
    await vi.advanceTimersByTimeAsync(20_000);
    await settled;
    expect(calls).toBe(5);
  });

  it("does not retry what classify accepts, even an error", async () => {
    const fn = vi.fn(async () => {
      throw new TypeError("bad input");
    });
    await expect(withRetry(PROGRESS_RETRY, fn, () => undefined)).rejects.toThrow("bad input");
    expect(fn).toHaveBeenCalledTimes(1);
  });
});

describe("jitter", () => {
  it("spreads each wait between half its share and all of it, by the random source", () => {
    // Share after the 3rd failure of DELIVERY_RETRY: 4 s.
    const draws = [0, 0.25, 0.5, 0.75, 0.999];
    expect(draws.map((r) => backoffMs(DELIVERY_RETRY, 3, () => r))).toEqual([4000, 3500, 3000, 2500, 2002]);
    // Capped shares are spread too: 30 s at most, never under 15 s.
    expect(backoffMs(DELIVERY_RETRY, 20, () => 0.999)).toBe(15_015);
  });

  it("a fleet failing together does not retry together: Math.random's waits differ and stay in bounds", () => {
    const waits = Array.from({ length: 200 }, () => backoffMs(DELIVERY_RETRY, 4));
    for (const wait of waits) {
      expect(wait).toBeGreaterThanOrEqual(4000);
      expect(wait).toBeLessThanOrEqual(8000);
    }
    // 200 draws over 4001 whole milliseconds: far more than a handful of distinct waits.
    expect(new Set(waits).size).toBeGreaterThan(100);
  });

  it("withRetry waits what the random source draws", async () => {
    const waits: number[] = [];
    const draws = [0.5, 0.1];
    const result = withRetry(
      PROGRESS_RETRY,
      async (attempt) => {
        if (attempt < 3) throw new Error("down");
        return attempt;
      },
      retryErrors,
      { random: () => draws.shift()!, onRetry: (_r, _a, waitMs) => waits.push(waitMs) },
    );
    await vi.advanceTimersByTimeAsync(750 + 1900);
    await expect(result).resolves.toBe(3);
    expect(waits).toEqual([750, 1900]);
  });
});

describe("sleep", () => {
  it("resolves after the time, or at once when the signal aborts", async () => {
    let done = false;
    void sleep(1000).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);

    const controller = new AbortController();
    let early = false;
    void sleep(60_000, controller.signal).then(() => {
      early = true;
    });
    controller.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(early).toBe(true);
  });
});
