// The scheduler's bounds on hostile load (issue 43, cases 5-6), on an injected clock: a job whose job-take answer
// never reaches a worker counts a retry each time and ends FAILED; the memory budget refuses a job while
// unfinished jobs fill it, forgets finished jobs oldest first to make room, and never refuses a result.
import { afterEach, describe, expect, it } from "vitest";
import { isFlashError } from "../../../../src/flash-error.js";
import { createLogger } from "../../../../src/log/index.js";
import { ENDPOINT_DEFAULTS, type EndpointState } from "../../../../src/platform/state/endpoint.js";
import { DEFAULT_RETENTION, type JobRecord } from "../../../../src/platform/state/jobs.js";
import { Scheduler } from "../../../../src/platform/state/scheduler.js";

let scheduler: Scheduler | undefined;
afterEach(() => scheduler?.close());

function setup(memoryBytes?: number) {
  let clock = 1_000_000;
  const lines: string[] = [];
  scheduler = new Scheduler({
    retention: DEFAULT_RETENTION,
    workerLostMs: 3_600_000,
    ...(memoryBytes === undefined ? {} : { memoryBytes }),
    logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } }),
    now: () => clock,
  });
  const endpoint = scheduler.addEndpoint({ id: "ep", name: "ep", env: {}, ...ENDPOINT_DEFAULTS });
  return { s: scheduler, endpoint, lines, advance: (ms: number) => (clock += ms) };
}

const never = new AbortController().signal;

async function takeOne(s: Scheduler, endpoint: EndpointState, workerId: string): Promise<JobRecord> {
  s.seen(endpoint, workerId);
  const [job] = await s.take(endpoint, workerId, 1, 0, never);
  if (!job) throw new Error("no job to take");
  return job;
}

/** The PlatformMemoryFull a call throws (undefined if it throws none). */
function refusal(call: () => unknown): Error | undefined {
  try {
    call();
  } catch (err) {
    if (isFlashError(err, "PLATFORM_MEMORY_FULL")) return err;
    throw err;
  }
  return undefined;
}

describe("a job whose job-take answer never reaches its worker", () => {
  it("counts a retry each time its worker's pings leave it out, and ends FAILED after the last", async () => {
    const { s, endpoint, lines, advance } = setup();
    const job = s.submit(endpoint, { input: {}, sync: false });
    const max = ENDPOINT_DEFAULTS.maxRetries;
    for (let attempt = 0; attempt <= max; attempt++) {
      expect(await takeOne(s, endpoint, "w1")).toBe(job);
      advance(2_000);
      s.ping(endpoint, "w1", undefined, []);
      s.ping(endpoint, "w1", undefined, []);
      expect(job.retries).toBe(Math.min(attempt + 1, max));
    }
    expect(job.status).toBe("FAILED");
    expect(job.error).toBe(
      `Worker w1 never received the job (missing from 2 pings in a row: its job-take answer was lost) and the job had no retries left (${max})`,
    );
    expect(endpoint.queue.size).toBe(0);
    expect(endpoint.counters).toMatchObject({ retried: max, failed: 1 });
    expect(lines.filter((l) => l.includes("job requeued (retry"))).toHaveLength(max);
  });

  it("a job its pings name again is kept: the misses must be in a row", async () => {
    const { s, endpoint, advance } = setup();
    const job = s.submit(endpoint, { input: {}, sync: false });
    await takeOne(s, endpoint, "w1");
    advance(2_000);
    for (let i = 0; i < 5; i++) {
      s.ping(endpoint, "w1", undefined, []);
      s.ping(endpoint, "w1", undefined, [job.id]);
    }
    expect(job).toMatchObject({ status: "IN_PROGRESS", retries: 0 });
  });

  it("undeliverable: FAILED at once with the reason, no retry", async () => {
    const { s, endpoint } = setup();
    const job = s.submit(endpoint, { input: {}, sync: false });
    await takeOne(s, endpoint, "w1");
    s.undeliverable(endpoint, job, "The job could not be written as JSON for its worker: boom");
    expect(job).toMatchObject({ status: "FAILED", retries: 0 });
    expect(endpoint.inProgress).toBe(0);
    expect(endpoint.workers.get("w1")?.jobs.size).toBe(0);
  });
});

describe("the memory budget", () => {
  it("refuses a job while unfinished jobs fill it, naming the sizes; accepts again once one finishes", async () => {
    const { s, endpoint } = setup(1_000);
    const first = s.submit(endpoint, { input: 1, sync: false, bytes: 400 });
    s.submit(endpoint, { input: 2, sync: false, bytes: 400 });
    const full = refusal(() => s.submit(endpoint, { input: 3, sync: false, bytes: 400 }));
    expect(full?.message).toBe(
      "The platform's memory budget for job payloads is full: this request needs 400 bytes, and jobs not yet finished hold 800 bytes of 1000 bytes (FLASH_PLATFORM_MEMORY_MB). Retry when jobs finish, or give the platform more",
    );
    expect(refusal(() => s.checkRoom(201))).toBeDefined();
    expect(refusal(() => s.checkRoom(200))).toBeUndefined();
    expect(s.jobs.size).toBe(2);
    // The first finishes with a small result: its 500 bytes may go, so a 400-byte job fits.
    await takeOne(s, endpoint, "w1");
    expect(s.done(endpoint, "w1", first, { output: "ok" }, false, 100)).toBe("accepted");
    expect(s.jobs.unfinishedBytes).toBe(400);
    const third = s.submit(endpoint, { input: 3, sync: false, bytes: 400 });
    expect(s.jobs.get(first.id)).toBeUndefined();
    expect(s.jobs.get(third.id)?.status).toBe("IN_QUEUE");
    expect(s.jobs.heldBytes).toBe(800);
  });

  it("forgets finished jobs oldest first, only as many as the new job needs", async () => {
    const { s, endpoint, lines } = setup(1_000);
    const jobs = [0, 1, 2, 3].map((i) => s.submit(endpoint, { input: i, sync: false, bytes: 200 }));
    for (const job of jobs) {
      await takeOne(s, endpoint, "w1");
      s.done(endpoint, "w1", job, { output: job.input }, false, 50);
    }
    // 4 × 250 = 1000 held, all finished; 300 more need two to go: the two that finished first.
    s.submit(endpoint, { input: "new", sync: false, bytes: 300 });
    expect(jobs.map((job) => s.jobs.get(job.id) !== undefined)).toEqual([false, false, true, true]);
    expect(lines.filter((l) => l.includes("Job forgotten before its retention ended"))).toHaveLength(2);
  });

  it("never refuses a result: it is kept, and older finished jobs make room for it", async () => {
    const { s, endpoint } = setup(1_000);
    const old = s.submit(endpoint, { input: 1, sync: false, bytes: 300 });
    await takeOne(s, endpoint, "w1");
    s.done(endpoint, "w1", old, { output: 1 }, false, 0);
    const big = s.submit(endpoint, { input: 2, sync: false, bytes: 300 });
    await takeOne(s, endpoint, "w1");
    expect(s.done(endpoint, "w1", big, { output: "x" }, false, 5_000)).toBe("accepted");
    expect(big.status).toBe("COMPLETED");
    expect(s.jobs.get(old.id)).toBeUndefined();
    expect(s.jobs.get(big.id)).toBe(big);
    expect(s.jobs.heldBytes).toBe(5_300);
    // Over the budget with nothing else finished: the next job makes it go, the oldest finished one.
    expect(refusal(() => s.submit(endpoint, { input: 3, sync: false, bytes: 1 }))).toBeUndefined();
    expect(s.jobs.get(big.id)).toBeUndefined();
  });

  it("a stream chunk the unfinished jobs leave no room for is refused; a requeue frees its chunks", async () => {
    const { s, endpoint } = setup(1_000);
    const job = s.submit(endpoint, { input: 1, sync: false, bytes: 100 });
    await takeOne(s, endpoint, "w1");
    expect(s.streamChunk(endpoint, "w1", job, { output: "a" }, 800)).toBe("accepted");
    expect(refusal(() => s.streamChunk(endpoint, "w1", job, { output: "b" }, 200))).toBeDefined();
    expect(job.stream).toHaveLength(1);
    s.workerGone(endpoint, "w1", "exited");
    expect(job).toMatchObject({ status: "IN_QUEUE", streamBytes: 0 });
    expect(s.jobs.heldBytes).toBe(100);
  });

  it("a finished job retried runs again: it is no longer the first to go", async () => {
    const { s, endpoint } = setup(1_000);
    const job = s.submit(endpoint, { input: 1, sync: false, bytes: 600 });
    await takeOne(s, endpoint, "w1");
    s.done(endpoint, "w1", job, { error: "boom" }, false, 0);
    expect(s.retry(endpoint, job)).toBe(true);
    expect(job.expiresAt).toBeUndefined();
    expect(refusal(() => s.submit(endpoint, { input: 2, sync: false, bytes: 600 }))).toBeDefined();
    expect(s.jobs.get(job.id)?.status).toBe("IN_QUEUE");
  });
});
