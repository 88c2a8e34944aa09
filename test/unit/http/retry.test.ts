// withRetry and the named policies, on vitest's fake clock: the waits are exactly what the comments state.
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

/** Every wait a policy makes before giving up, summed. */
function totalWaitMs(policy: RetryPolicy): number {
  let total = 0;
  for (let failed = 1; failed < policy.attempts; failed++) total += backoffMs(policy, failed);
  return total;
}

const retryErrors = (outcome: Outcome<unknown>) => (outcome.ok ? undefined : String(outcome.error));

describe("named policies", () => {
  it("wait in total what their comments say", () => {
    expect(totalWaitMs(PROGRESS_RETRY)).toBe(15_000);
    expect(totalWaitMs(PING_RETRY)).toBe(1_500);
    expect(totalWaitMs(CONNECT_RETRY)).toBe(1_500);
    expect(totalWaitMs(UPLOAD_RETRY)).toBe(6_000);
    expect(totalWaitMs(WEBHOOK_RETRY)).toBe(20_000);
  });

  it("deliveries have no attempt count and wait at most 30 s between attempts", () => {
    expect(DELIVERY_RETRY.attempts).toBe(Number.POSITIVE_INFINITY);
    expect([1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffMs(DELIVERY_RETRY, n))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000,
    ]);
  });

  it("cap the doubling at maxMs", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(POLL_BACKOFF, n))).toEqual([
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
    const result = withRetry(DELIVERY_RETRY, fn, retryErrors, { deadline: Date.now() + 20_000 });
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
