// Scheduling: execution timeout, lost workers and their jobs, and webhooks on every terminal state.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ENDPOINT, eventually, type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

let t: TestPlatform | undefined;
afterEach(async () => {
  await t?.platform.close();
  t = undefined;
});

const run = async (p: TestPlatform, input: unknown, extra: Record<string, unknown> = {}): Promise<string> =>
  ((await (await p.client("/run", { body: { input, ...extra } })).json()) as JobJson).id;
const status = async (p: TestPlatform, id: string): Promise<JobJson> =>
  (await (await p.client(`/status/${id}`)).json()) as JobJson;

describe("execution timeout", () => {
  it("ends a job that runs too long as TIMED_OUT and tells its worker to stop it", async () => {
    t = await startTestPlatform({ endpoints: [{ id: ENDPOINT, executionTimeoutMs: 300 }] });
    const id = await run(t, "slow");
    const worker = t.worker("w1");
    await worker.takeOne();
    const stops = await eventually(async () => {
      const ids = await worker.stops();
      return ids.length > 0 ? ids : undefined;
    }, "the stop signal");
    expect(stops).toEqual([id]);
    const timedOut = await status(t, id);
    expect(timedOut).toMatchObject({ status: "TIMED_OUT", workerId: "w1" });
    expect(timedOut.error).toContain("Execution timeout");
    expect(timedOut.executionTime).toBeGreaterThanOrEqual(300);
    expect(await (await t.client("/health")).json()).toMatchObject({ jobs: { failed: 1, inProgress: 0 } });
    // The worker's late result is ignored, not an error.
    expect((await worker.done(id, { output: "late" })).status).toBe(200);
    expect((await status(t, id)).status).toBe("TIMED_OUT");
  });

  it("a request's policy.executionTimeout overrides the endpoint's", async () => {
    t = await startTestPlatform();
    // 5 s: the shortest the platform takes (send-requests, Execution policies).
    const id = await run(t, "slow", { policy: { executionTimeout: 5_000 } });
    await t.worker("w1").takeOne();
    await eventually(async () => (await status(t!, id)).status === "TIMED_OUT", "the timeout");
  });

  it("retry brings a TIMED_OUT job back", async () => {
    t = await startTestPlatform({ endpoints: [{ id: ENDPOINT, executionTimeoutMs: 200 }] });
    const id = await run(t, "slow");
    await t.worker("w1").takeOne();
    await eventually(async () => (await status(t!, id)).status === "TIMED_OUT", "the timeout");
    expect((await t.client(`/retry/${id}`, { method: "POST" })).status).toBe(200);
    const again = await t.worker("w2").takeOne();
    expect(again.id).toBe(id);
  });
});

describe("lost workers", () => {
  it("requeues the jobs of a worker that stopped calling in, counted as retried", async () => {
    t = await startTestPlatform({ workerLostMs: 400 });
    const id = await run(t, "survive");
    await t.worker("dies").takeOne();
    const next = t.worker("lives");
    const job = await next.takeOne();
    expect(job.id).toBe(id);
    expect(await status(t, id)).toMatchObject({ status: "IN_PROGRESS", workerId: "lives", retries: 1 });
    expect(
      t.lines.some((l) => l.includes("Worker:dies | stopped pinging; job requeued (retry 1 of 3)")),
    ).toBe(true);
    await next.done(id, { output: "made it" });
    expect(await status(t, id)).toMatchObject({ status: "COMPLETED", output: "made it" });
    expect(await (await t.client("/health")).json()).toMatchObject({ jobs: { retried: 1, completed: 1 } });
    // The lost worker's late result is refused: the job is no longer its own.
    expect((await t.worker("dies").done(id, { output: "zombie" })).status).toBe(409);
  });

  it("fails the job once the retry limit is used up", async () => {
    t = await startTestPlatform({ workerLostMs: 300, endpoints: [{ id: ENDPOINT, maxRetries: 1 }] });
    const id = await run(t, "doomed");
    await t.worker("first").takeOne();
    await t.worker("second").takeOne();
    const failed = await eventually(async () => {
      const job = await status(t!, id);
      return job.status === "FAILED" ? job : undefined;
    }, "the job to fail");
    expect(failed.error).toContain("Worker second was lost");
    expect(failed.retries).toBe(1);
  });

  it("keeps the jobs of a worker that goes on pinging", async () => {
    t = await startTestPlatform({ workerLostMs: 3_000 });
    const id = await run(t, "long");
    const worker = t.worker("pinger");
    await worker.takeOne();
    // A worker that takes a job after it and never pings: once that one is found lost, the lost-worker
    // window has passed for both, and only the pings kept the first.
    const quiet = await run(t, "quiet");
    await t.worker("quiet").takeOne();
    while ((await status(t, quiet)).status === "IN_PROGRESS") {
      await worker.ping([id]);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(t.lines.some((l) => l.includes("Worker:quiet | stopped pinging; job requeued"))).toBe(true);
    expect(await status(t, id)).toMatchObject({ status: "IN_PROGRESS", workerId: "pinger" });
    expect(t.platform.scheduler.jobs.get(id)?.retries).toBe(0);
  });

  it("requeues a job its worker's pings leave out twice: the job-take answer never reached it", async () => {
    t = await startTestPlatform({ workerLostMs: 60_000 });
    const kept = await run(t, "kept");
    const lost = await run(t, "lost");
    const worker = t.worker("forgetful");
    const first = await worker.takeOne();
    const second = await worker.takeOne();
    expect([first.id, second.id].sort()).toEqual([kept, lost].sort());
    // Just taken: a ping that crossed the answer may leave the job out without consequence.
    await worker.ping([kept]);
    await worker.ping([kept]);
    expect(await status(t, lost)).toMatchObject({ status: "IN_PROGRESS" });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await worker.ping([kept]);
    expect(await status(t, lost)).toMatchObject({ status: "IN_PROGRESS" });
    await worker.ping([kept]);
    expect(await status(t, lost)).toMatchObject({ status: "IN_QUEUE" });
    expect(await status(t, kept)).toMatchObject({ status: "IN_PROGRESS", workerId: "forgetful" });
    expect(t.lines.some((l) => l.includes("job missing from 2 pings in a row"))).toBe(true);
    // The requeued job is handed out again, once.
    const again = await t.worker("other").takeOne();
    expect(again.id).toBe(lost);
  });

  it("counts an open job-stop long-poll as alive", async () => {
    t = await startTestPlatform({ workerLostMs: 300, longPollMs: 3_000 });
    const id = await run(t, "long");
    const worker = t.worker("poller");
    await worker.takeOne();
    expect(await worker.stops()).toEqual([]);
    expect(await status(t, id)).toMatchObject({ status: "IN_PROGRESS", workerId: "poller" });
  });
});

interface Received {
  body: Record<string, unknown>;
  contentType: string | undefined;
}

/** A webhook receiver that answers 500 to the first `failures` posts of each job, then 200. */
async function webhookReceiver(
  failures: number,
): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const attempts = new Map<string, number>();
  const server: Server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.on("data", (chunk) => {
      text += chunk;
    });
    req.on("end", () => {
      const body = JSON.parse(text) as Record<string, unknown>;
      const id = String(body.id);
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      received.push({ body, contentType: req.headers["content-type"] });
      res.statusCode = n <= failures ? 500 : 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe("webhooks", () => {
  it("posts the finished job, retrying after failures", async () => {
    const receiver = await webhookReceiver(2);
    try {
      t = await startTestPlatform();
      const id = await run(t, { q: 1 }, { webhook: receiver.url });
      const worker = t.worker("w1");
      await worker.takeOne();
      await worker.done(id, { output: { a: 1 } });
      await eventually(() => receiver.received.length === 3, "three deliveries");
      const job = await status(t, id);
      for (const { body, contentType } of receiver.received) {
        expect(contentType).toBe("application/json");
        expect(body).toEqual({
          id,
          status: "COMPLETED",
          input: { q: 1 },
          output: { a: 1 },
          delayTime: job.delayTime,
          executionTime: job.executionTime,
          workerId: "w1",
          webhook: receiver.url,
        });
      }
      expect(t.lines.filter((l) => l.includes(`Webhook to ${receiver.url} failed`)).length).toBe(2);
    } finally {
      await receiver.close();
    }
  });

  it("gives up after the last attempt", async () => {
    const receiver = await webhookReceiver(10);
    try {
      t = await startTestPlatform();
      const id = await run(t, 1, { webhook: receiver.url });
      const worker = t.worker("w1");
      await worker.takeOne();
      await worker.done(id, { output: 1 });
      await eventually(() => t!.lines.some((l) => l.includes("; giving up")), "the last attempt");
      expect(receiver.received.length).toBe(3);
    } finally {
      await receiver.close();
    }
  });

  it("is sent for FAILED, CANCELLED and TIMED_OUT jobs too", async () => {
    const receiver = await webhookReceiver(0);
    try {
      t = await startTestPlatform({ endpoints: [{ id: ENDPOINT, executionTimeoutMs: 200 }] });
      const worker = t.worker("w1");
      const failed = await run(t, "f", { webhook: receiver.url });
      await worker.takeOne();
      await worker.done(failed, { error: "broken" });
      const cancelled = await run(t, "c", { webhook: receiver.url });
      await t.client(`/cancel/${cancelled}`, { method: "POST" });
      const timedOut = await run(t, "t", { webhook: receiver.url });
      await worker.takeOne();
      await eventually(() => receiver.received.length === 3, "three webhooks");
      const byId = new Map(receiver.received.map((r) => [r.body.id, r.body]));
      expect(byId.get(failed)).toMatchObject({ status: "FAILED", error: "broken", input: "f" });
      expect(byId.get(cancelled)).toMatchObject({ status: "CANCELLED", input: "c" });
      expect(byId.get(timedOut)).toMatchObject({ status: "TIMED_OUT", input: "t" });
    } finally {
      await receiver.close();
    }
  });
});
