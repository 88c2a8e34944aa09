// Scheduler.waitForChange's onChange: a relay (the /openai/v1 stream) writes a chunk to its client at the change
// itself, before the worker's post that made it is answered, and only on a change.
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { ENDPOINT_DEFAULTS } from "../../../../src/platform/state/endpoint.js";
import { DEFAULT_RETENTION } from "../../../../src/platform/state/jobs.js";
import { Scheduler } from "../../../../src/platform/state/scheduler.js";

let scheduler: Scheduler | undefined;
afterEach(() => scheduler?.close());

async function runningJob() {
  scheduler = new Scheduler({
    retention: DEFAULT_RETENTION,
    workerLostMs: 3_600_000,
    logger: createLogger({ level: "INFO", json: false, destination: { write: () => {} } }),
  });
  const endpoint = scheduler.addEndpoint({ id: "ep", name: "ep", env: {}, ...ENDPOINT_DEFAULTS });
  const job = scheduler.submit(endpoint, { input: {}, sync: true });
  scheduler.seen(endpoint, "w1");
  await scheduler.take(endpoint, "w1", 1, 0, new AbortController().signal);
  return { s: scheduler, endpoint, job };
}

describe("Scheduler.waitForChange(job, ms, signal, onChange)", () => {
  it("runs onChange inside the change, before the stream post that made it returns; the wait then resolves", async () => {
    const { s, endpoint, job } = await runningJob();
    const order: string[] = [];
    const waiting = s.waitForChange(job, 60_000, new AbortController().signal, () =>
      order.push(`onChange sees ${job.stream.length} chunk(s)`),
    );
    expect(s.streamChunk(endpoint, "w1", job, { output: "data: a\n\n" })).toBe("accepted");
    order.push("stream post answered");
    await waiting;
    expect(order).toEqual(["onChange sees 1 chunk(s)", "stream post answered"]);
  });

  it("a wait that ends by its time or its signal, with no change, never calls onChange", async () => {
    const { s, job } = await runningJob();
    const calls: string[] = [];
    await s.waitForChange(job, 1, new AbortController().signal, () => calls.push("timed out"));
    const aborted = new AbortController();
    const waiting = s.waitForChange(job, 60_000, aborted.signal, () => calls.push("aborted"));
    aborted.abort();
    await waiting;
    // The next change calls only the onChange of a wait still open.
    const open = s.waitForChange(job, 60_000, new AbortController().signal, () => calls.push("open"));
    s.cancel(s.endpoint("ep")!, job);
    await open;
    expect(calls).toEqual(["open"]);
  });
});
