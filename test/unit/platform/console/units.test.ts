// Units of the console's server side: metrics buckets and percentiles, event tokens, the log ring and its tee.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { eventToken, TOKEN_TTL_MS, validEventToken } from "../../../../src/platform/console/auth.js";
import { LogBook, teeLogger, workerFilter } from "../../../../src/platform/console/logs.js";
import { MetricsBook, percentile } from "../../../../src/platform/console/metrics.js";
import type { JobRecord, JobStatus } from "../../../../src/platform/state/jobs.js";

function finishedJob(
  endpointId: string,
  finishedAt: number,
  delayTime: number,
  executionTime: number,
  status: JobStatus = "COMPLETED",
  taken = true,
): JobRecord {
  return {
    id: `job-${finishedAt}-${delayTime}`,
    endpointId,
    status,
    input: {},
    executionTimeoutMs: 1_000,
    sync: false,
    createdAt: finishedAt - delayTime - executionTime,
    ...(taken ? { takenAt: finishedAt - executionTime } : {}),
    finishedAt,
    delayTime,
    executionTime,
    hasOutput: false,
    stream: [],
    streamRead: 0,
    streamed: false,
    outputStreamed: false,
    retries: 0,
    lowPriority: false,
    ttlMs: 86_400_000,
    ttlAt: finishedAt + 86_400_000,
    inputBytes: 0,
    outputBytes: 0,
    streamBytes: 0,
  };
}

describe("metrics", () => {
  it("nearest-rank percentiles", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 95)).toBe(95);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([], 50)).toBeNull();
    expect(percentile([1, 2], 50)).toBe(1);
  });

  it("counts requests and outcomes per endpoint and bucket, and times only jobs a worker took", () => {
    let now = 1_000_000;
    const book = new MetricsBook(10_000, 60_000, () => now);
    book.request("a", now);
    book.request("a", now + 1);
    book.request("b", now + 2);
    for (let i = 1; i <= 20; i++) book.finished(finishedJob("a", now + 5_000, i * 10, i * 100));
    book.finished(finishedJob("a", now + 5_000, 3, 0, "CANCELLED", false));
    book.finished(finishedJob("a", now + 12_000, 1, 1, "FAILED"));
    const { series, bucketMs } = book.snapshot();
    expect(bucketMs).toBe(10_000);
    expect(series.a).toHaveLength(2);
    expect(series.a?.[0]).toEqual({
      t: 1_000_000,
      requests: 2,
      completed: 20,
      failed: 0,
      cancelled: 1,
      delayP50: 100,
      delayP95: 190,
      executionP50: 1_000,
      executionP95: 1_900,
    });
    expect(series.a?.[1]).toMatchObject({ t: 1_010_000, failed: 1, delayP50: 1 });
    expect(series.b?.[0]).toMatchObject({ requests: 1, completed: 0, delayP50: null });

    // Buckets leave the window as time passes.
    now += 71_000;
    expect(book.snapshot().series.a?.map((b) => b.t)).toEqual([1_010_000]);
    now += 10_000;
    expect(book.snapshot().series).toEqual({});
  });

  it("reports each changed bucket once", () => {
    const now = 50_000;
    const book = new MetricsBook(10_000, 60_000, () => now);
    book.request("a", now);
    book.request("a", now);
    book.finished(finishedJob("a", now, 5, 5));
    const changed = book.takeChanged();
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatchObject({ endpointId: "a", bucket: { t: 50_000, requests: 2, completed: 1 } });
    expect(book.takeChanged()).toEqual([]);
    book.request("a", now - 15_000);
    expect(book.takeChanged().map((c) => c.bucket.t)).toEqual([30_000]);
    expect(book.snapshot().series.a?.map((b) => b.t)).toEqual([30_000, 50_000]);
  });

  it("keeps a bounded sample per bucket and percentiles close to the truth", () => {
    const now = 0;
    let seed = 1;
    const random = () => {
      seed = (seed * 16_807) % 2_147_483_647;
      return seed / 2_147_483_647;
    };
    const book = new MetricsBook(10_000, 60_000, () => now, random);
    for (let i = 0; i < 20_000; i++) book.finished(finishedJob("a", 0, i % 1_000, 0));
    const bucket = book.snapshot().series.a?.[0];
    expect(bucket?.completed).toBe(20_000);
    expect(bucket?.delayP50).toBeGreaterThan(440);
    expect(bucket?.delayP50).toBeLessThan(560);
    expect(bucket?.delayP95).toBeGreaterThan(900);
  });
});

describe("event tokens", () => {
  it("are valid for their key until they expire, and tampering fails", () => {
    const now = 1_700_000_000_000;
    const { token, expiresAt } = eventToken("key-1", now);
    expect(expiresAt).toBe(now + TOKEN_TTL_MS);
    expect(validEventToken(token, "key-1", now)).toBe(true);
    expect(validEventToken(token, "key-1", expiresAt - 1)).toBe(true);
    expect(validEventToken(token, "key-1", expiresAt)).toBe(false);
    expect(validEventToken(token, "key-2", now)).toBe(false);
    const [stamp, mac] = token.split(".") as [string, string];
    expect(validEventToken(`${Number(stamp) + 1_000}.${mac}`, "key-1", now)).toBe(false);
    expect(validEventToken(`${stamp}.${mac.slice(0, -1)}`, "key-1", now)).toBe(false);
    // A far-future stamp is refused even with a matching MAC: nothing lives longer than the TTL.
    const far = eventToken("key-1", now + 10 * TOKEN_TTL_MS).token;
    expect(validEventToken(far, "key-1", now)).toBe(false);
    for (const bad of ["", ".", "abc", "1.", ".x", "key-1"])
      expect(validEventToken(bad, "key-1", now)).toBe(false);
  });
});

describe("log book", () => {
  it("keeps the newest lines in a ring and finds a worker's", () => {
    const book = new LogBook(5, () => 42);
    for (let i = 1; i <= 8; i++) {
      book.add("info", i % 2 ? `Worker:w1 | line ${i}` : `line ${i}`, { subject: i % 2 ? "platform" : "w2" });
    }
    expect(book.recent(() => true, 10).map((l) => l.message)).toEqual([
      "line 4",
      "Worker:w1 | line 5",
      "line 6",
      "Worker:w1 | line 7",
      "line 8",
    ]);
    expect(book.recent(workerFilter("w1"), 10).map((l) => l.seq)).toEqual([5, 7]);
    expect(book.recent(workerFilter("w2"), 1).map((l) => l.seq)).toEqual([8]);
    expect(book.recent(workerFilter(undefined), 2).map((l) => l.seq)).toEqual([7, 8]);
  });

  it("tees every level and child binding, whatever the output level", () => {
    const book = new LogBook();
    const written: string[] = [];
    const inner = createLogger({
      level: "ERROR",
      json: false,
      destination: { write: (l) => written.push(l) },
    });
    const log = teeLogger(inner, book);
    log.child({ subject: "w9" }).debug("hello");
    log.child({ requestId: "job-1" }).error("Worker:w9 | failed");
    expect(book.recent(() => true, 10)).toMatchObject([
      { level: "debug", subject: "w9", message: "hello" },
      { level: "error", jobId: "job-1", workerId: "w9", message: "Worker:w9 | failed" },
    ]);
    expect(written).toHaveLength(1);
    expect(log.level).toBe("ERROR");
  });
});
