// runpod-sdk from npm (the platform's official JavaScript client) drives every client route it has
// against the local platform, unchanged; the worker side is spoken in raw requests (docs/protocol.md §15).
import runpodSdk from "runpod-sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENDPOINT, type JobJson, startTestPlatform, type TestPlatform, type WireWorker } from "./helpers.js";

let t: TestPlatform;
beforeEach(async () => {
  t = await startTestPlatform();
});
afterEach(async () => {
  await t.platform.close();
});

const endpoint = () => runpodSdk(t.platform.apiKey, { baseUrl: `${t.platform.url}/v2` }).endpoint(ENDPOINT)!;

/** A worker that echoes every job's input until stopped. */
function echoLoop(worker: WireWorker): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      const job = await worker.take();
      if (job) await worker.done(job.id, { output: { echo: job.input } });
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

describe("runpod-sdk against the local platform", () => {
  it("run, then status as the worker takes and completes the job", async () => {
    const ep = endpoint();
    const queued = await ep.run({ input: { prompt: "hi" } });
    expect(queued).toMatchObject({ status: "IN_QUEUE" });
    const id = queued.id;
    expect(id).toMatch(/^[0-9a-f-]{36}-e1$/);

    expect(await ep.status(id)).toMatchObject({ id, status: "IN_QUEUE", started: true, completed: false });

    const worker = t.worker("w1");
    const job = await worker.takeOne();
    expect(job).toEqual({ id, input: { prompt: "hi" } });
    expect(await ep.status(id)).toMatchObject({ status: "IN_PROGRESS", workerId: "w1" });

    expect((await worker.done(id, { output: "hello" })).status).toBe(200);
    const done = (await ep.status(id)) as JobJson & { succeeded: boolean };
    expect(done).toMatchObject({ id, status: "COMPLETED", output: "hello", workerId: "w1", succeeded: true });
    expect(done.delayTime).toBeGreaterThanOrEqual(0);
    expect(done.executionTime).toBeGreaterThanOrEqual(0);

    expect(t.lines.some((l) => l.includes(`| ${id} | Worker:w1 | Delay Time: ${done.delayTime} ms`))).toBe(
      true,
    );
    expect(
      t.lines.some((l) => l.includes(`| ${id} | Worker:w1 | Execution Time: ${done.executionTime} ms`)),
    ).toBe(true);
  });

  it("runSync returns the finished job", async () => {
    const loop = echoLoop(t.worker("w-sync"));
    try {
      const result = await endpoint().runSync({ input: { n: 1 } });
      expect(result).toMatchObject({ status: "COMPLETED", output: { echo: { n: 1 } }, workerId: "w-sync" });
      expect(result.id).toMatch(/^sync-/);
      expect(result.delayTime).toBeGreaterThanOrEqual(0);
      expect(result.executionTime).toBeGreaterThanOrEqual(0);
    } finally {
      await loop.stop();
    }
  });

  it("status-sync waits for a job that outlasted its /runsync wait", async () => {
    // No worker yet: /runsync answers with the job still queued once its wait ends.
    const first = await t.client("/runsync?wait=1000", { body: { input: { slow: true } } });
    const queued = (await first.json()) as JobJson;
    expect(queued).toMatchObject({ status: "IN_QUEUE" });
    const waiting = endpoint().statusSync(queued.id, 60_000);
    const worker = t.worker("w-late");
    const job = await worker.takeOne();
    expect(job.id).toBe(queued.id);
    await worker.done(job.id, { output: "late" });
    expect(await waiting).toMatchObject({ id: job.id, status: "COMPLETED", output: "late", completed: true });
  });

  it("stream yields each chunk, then ends when the job is done", async () => {
    const ep = endpoint();
    const { id } = await ep.run({ input: { text: "a b c" } });
    const worker = t.worker("w-stream");
    const job = await worker.takeOne();
    const chunks: unknown[] = [];
    const reading = (async () => {
      for await (const chunk of ep.stream(id)) chunks.push(chunk);
    })();
    for (const token of ["a", "b", "c"]) expect((await worker.stream(job.id, token)).status).toBe(200);
    await worker.done(job.id, { output: ["a", "b", "c"] }, { isStream: true });
    await reading;
    expect(chunks).toEqual([{ output: "a" }, { output: "b" }, { output: "c" }]);
    expect(await ep.status(id)).toMatchObject({ status: "COMPLETED", output: ["a", "b", "c"] });
  });

  it("cancel ends a queued job, and a running one with a stop signal to its worker", async () => {
    const ep = endpoint();
    const queued = await ep.run({ input: {} });
    expect(await ep.cancel(queued.id)).toMatchObject({ id: queued.id, status: "CANCELLED" });
    expect(await ep.status(queued.id)).toMatchObject({ status: "CANCELLED", completed: true });

    const running = await ep.run({ input: {} });
    const worker = t.worker("w-cancel");
    await worker.takeOne();
    const stops = worker.stops();
    const cancelled = await ep.cancel(running.id);
    expect(cancelled).toMatchObject({ id: running.id, status: "CANCELLED", workerId: "w-cancel" });
    expect(cancelled.executionTime).toBeGreaterThanOrEqual(0);
    expect(await stops).toEqual([running.id]);
    // A result the worker still posts afterwards changes nothing.
    expect((await worker.done(running.id, { output: "too late" })).status).toBe(200);
    expect(await ep.status(running.id)).toMatchObject({ status: "CANCELLED" });
  });

  it("health counts jobs and workers", async () => {
    const ep = endpoint();
    const a = await ep.run({ input: 1 });
    await ep.run({ input: 2 });
    const worker = t.worker("w-health");
    const job = await worker.takeOne();
    expect(job.id).toBe(a.id);
    expect(await ep.health()).toEqual({
      jobs: { completed: 0, failed: 0, inProgress: 1, inQueue: 1, retried: 0 },
      workers: { idle: 0, initializing: 0, ready: 0, running: 1, throttled: 0, unhealthy: 0 },
    });
    await worker.done(job.id, { output: 1 });
    const next = await worker.takeOne();
    await worker.done(next.id, { error: "boom" });
    expect(await ep.health()).toMatchObject({
      jobs: { completed: 1, failed: 1, inProgress: 0, inQueue: 0, retried: 0 },
      workers: { idle: 1, running: 0 },
    });
  });

  it("purgeQueue removes queued jobs, which end CANCELLED", async () => {
    const ep = endpoint();
    const ids = [(await ep.run({ input: 1 })).id, (await ep.run({ input: 2 })).id];
    expect(await ep.purgeQueue()).toEqual({ removed: 2, status: "completed" });
    for (const id of ids) expect(await ep.status(id)).toMatchObject({ status: "CANCELLED" });
    expect(await ep.health()).toMatchObject({ jobs: { inQueue: 0 } });
  });
});
