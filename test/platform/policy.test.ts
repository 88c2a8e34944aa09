// A request's policy beyond executionTimeout: `ttl` (the job's whole life from submission, then it is
// deleted whatever its state) and `lowPriority` (the job waits for a worker but starts none).
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { ENDPOINT_DEFAULTS } from "../../src/platform/state/endpoint.js";
import { DEFAULT_RETENTION, DEFAULT_TTL_MS } from "../../src/platform/state/jobs.js";
import { Scheduler } from "../../src/platform/state/scheduler.js";
import { FLASH } from "../process.js";
import { eventually, type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

const TIMEOUT = 60_000;

describe("policy.ttl", () => {
  let scheduler: Scheduler | undefined;
  afterEach(() => scheduler?.close());

  const setup = () => {
    let clock = 1_000_000;
    const lines: string[] = [];
    scheduler = new Scheduler({
      retention: DEFAULT_RETENTION,
      workerLostMs: 3_600_000,
      logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } }),
      now: () => clock,
    });
    const endpoint = scheduler.addEndpoint({ id: "ttl", name: "ttl", env: {}, ...ENDPOINT_DEFAULTS });
    return { s: scheduler, endpoint, lines, advance: (ms: number) => (clock += ms) };
  };

  it("deletes a job when its TTL passes: finished, running (its worker is told to stop) or queued", async () => {
    const { s, endpoint, lines, advance } = setup();
    const cancelled = s.submit(endpoint, { input: 1, sync: false, ttlMs: 10_000 });
    const running = s.submit(endpoint, { input: 2, sync: false, ttlMs: 20_000 });
    const queued = s.submit(endpoint, { input: 3, sync: false });
    s.seen(endpoint, "w1");
    const taken = await s.take(endpoint, "w1", 2, 0, new AbortController().signal);
    expect(taken.map((j) => j.id)).toEqual([cancelled.id, running.id]);
    // a finished job is kept for the retention (30 min), but not past its TTL
    s.cancel(endpoint, cancelled);
    advance(9_999);
    s.sweep();
    expect(s.job(endpoint, cancelled.id)?.status).toBe("CANCELLED");
    advance(1);
    s.sweep();
    expect(s.job(endpoint, cancelled.id)).toBeUndefined();
    expect(s.job(endpoint, running.id)?.status).toBe("IN_PROGRESS");
    advance(10_000);
    s.sweep();
    expect(s.job(endpoint, running.id)).toBeUndefined();
    expect(endpoint.workers.get("w1")?.stops).toContain(running.id);
    expect(s.health(endpoint)).toMatchObject({ inProgress: 0, inQueue: 1 });
    expect(lines.join("")).toContain("Job expired while running: its TTL of 20000 ms passed; deleted");
    // the default TTL is the platform's 24 h
    advance(DEFAULT_TTL_MS - 20_001);
    s.sweep();
    expect(s.job(endpoint, queued.id)?.status).toBe("IN_QUEUE");
    advance(1);
    s.sweep();
    expect(s.job(endpoint, queued.id)).toBeUndefined();
    expect(s.health(endpoint)).toMatchObject({ inQueue: 0 });
    expect(lines.join("")).toContain("Job expired in the queue: its TTL of 86400000 ms passed; deleted");
  });

  it("a job that finished is kept for its retention or until its TTL, whichever ends first", async () => {
    const { s, endpoint, advance } = setup();
    const job = s.submit(endpoint, { input: 1, sync: false, ttlMs: 60_000 });
    s.cancel(endpoint, job);
    advance(59_999);
    expect(s.job(endpoint, job.id)?.status).toBe("CANCELLED");
    advance(1);
    expect(s.job(endpoint, job.id)).toBeUndefined();
  });
});

describe("policy on the wire", () => {
  let t: TestPlatform | undefined;
  afterEach(async () => {
    await t?.platform.close();
    t = undefined;
  }, TIMEOUT);

  it("ttl outside the platform's 10 s – 7 days is refused with 400", async () => {
    t = await startTestPlatform();
    for (const ttl of [9_999, 7 * 24 * 3_600_000 + 1, 1.5]) {
      const res = await t.client("/run", { body: { input: {}, policy: { ttl } } });
      expect(res.status, String(ttl)).toBe(400);
    }
    const ok = await t.client("/run", { body: { input: {}, policy: { ttl: 10_000, lowPriority: true } } });
    expect(ok.status).toBe(200);
  });

  it(
    "a lowPriority job starts no worker; it runs once another job brings one",
    async () => {
      const worker = [process.execPath, FLASH, "start", "examples/echo/handler.ts"];
      t = await startTestPlatform({
        endpoints: [{ id: "lazy", command: worker, cwd: process.cwd(), workers: [0, 1] }],
      });
      const run = async (body: unknown) =>
        (
          (await (
            await fetch(`${t!.platform.url}/v2/lazy/run`, {
              method: "POST",
              headers: { authorization: `Bearer ${t!.platform.apiKey}`, "content-type": "application/json" },
              body: JSON.stringify(body),
            })
          ).json()) as JobJson
        ).id;
      const status = async (id: string) =>
        (await (
          await fetch(`${t!.platform.url}/v2/lazy/status/${id}`, {
            headers: { authorization: `Bearer ${t!.platform.apiKey}` },
          })
        ).json()) as JobJson;
      const low = await run({ input: { name: "low" }, policy: { lowPriority: true } });
      // The pool decides when a job is queued and on each tick; asked again now, it still starts nothing.
      const pool = t.platform.pool("lazy")!;
      pool.scale();
      expect(pool.workerIds).toEqual([]);
      expect((await status(low)).status).toBe("IN_QUEUE");
      const normal = await run({ input: { name: "normal" } });
      await eventually(async () => (await status(normal)).status === "COMPLETED", "the normal job", 60_000);
      await eventually(
        async () => (await status(low)).status === "COMPLETED",
        "the low-priority job",
        60_000,
      );
      expect((await status(low)).output).toEqual({ name: "low" });
    },
    TIMEOUT,
  );
});
