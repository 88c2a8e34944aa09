// Jobs that misbehave, through the real local platform and a real worker process: each ends in a
// defined state, and the worker stays healthy and takes the next job.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type Flash, flash } from "../process.js";

let platform: Platform;
const workers: Flash[] = [];

async function api(endpoint: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${platform.url}/v2/${endpoint}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${platform.apiKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, unknown>;
}

async function settle(endpoint: string, id: string, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await api(endpoint, `/status/${id}`);
    if (!["IN_QUEUE", "IN_PROGRESS"].includes(job.status as string)) return job;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${job.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function startWorker(endpoint: string, file: string, id: string, env: Record<string, string> = {}): Flash {
  const worker = flash(["start", file], {
    ...platform.workerEnv(endpoint, id),
    RUNPOD_PING_INTERVAL: "300",
    ...env,
  });
  workers.push(worker);
  return worker;
}

beforeAll(async () => {
  platform = await startPlatform({
    longPollMs: 1000,
    workerLostMs: 2000,
    endpoints: [
      { id: "bad", executionTimeoutMs: 8000 },
      { id: "block", executionTimeoutMs: 60_000 },
      { id: "load" },
    ],
  });
});

afterAll(async () => {
  for (const w of workers) w.child.kill("SIGKILL");
  await Promise.all(workers.map((w) => w.exited));
  await platform?.close();
});

describe("misbehaving handlers", () => {
  beforeAll(() => {
    startWorker("bad", "test/fixtures/misbehave.ts", "w-bad");
  });

  it("a handler that never resolves: the execution timeout ends it (TIMED_OUT) and the worker takes the next job", async () => {
    const hung = await api("bad", "/run", { input: { mode: "hang" } });
    expect(await settle("bad", hung.id as string)).toMatchObject({ status: "TIMED_OUT" });
    const next = await api("bad", "/run", { input: { mode: "echo", value: 7 } });
    expect(await settle("bad", next.id as string)).toMatchObject({
      status: "COMPLETED",
      output: { echo: 7 },
    });
  });

  it("a result over the platform's limit: FAILED, with a message naming the size and the limit", async () => {
    // 15 MB: sent, and refused by the platform (a /run job's result is at most 10 MB).
    const big = await api("bad", "/run", { input: { mode: "big-result", mb: 15 } });
    const job = await settle("bad", big.id as string);
    expect(job.status).toBe("FAILED");
    expect(String(job.error)).toMatch(/the platform refused the 15\.0 MB result with 413 .*10 MB/);
    // 25 MB: over every limit, so the worker fails it before sending it (docs/protocol.md §11.2).
    const huge = await api("bad", "/run", { input: { mode: "big-result", mb: 25 } });
    const failed = await settle("bad", huge.id as string);
    expect(failed.status).toBe("FAILED");
    expect(String(failed.error)).toMatch(/^Job output is 25\.0 MB, over the platform's result limit .*20 MB/);
  });

  it("a stream chunk over 1 MB: FAILED, naming the size and the limit", async () => {
    const big = await api("bad", "/run", { input: { mode: "big-chunk", mb: 2 } });
    const job = await settle("bad", big.id as string);
    expect(job.status).toBe("FAILED");
    expect(job.error).toBe(
      "Stream chunk 1 could not be delivered: stream chunk is 2.0 MB, over the platform's limit of 1.0 MB",
    );
    const next = await api("bad", "/run", { input: { mode: "echo", value: "still here" } });
    expect(await settle("bad", next.id as string)).toMatchObject({ status: "COMPLETED" });
  });
});

describe("a handler that blocks the event loop", () => {
  it("for longer than the platform's lost-worker limit: pings continue, and the platform keeps the job", async () => {
    startWorker("block", "test/fixtures/misbehave.ts", "w-block");
    // workerLostMs is 2 s; the handler holds the main thread for 5 s.
    const job = await api("block", "/run", { input: { mode: "block", ms: 5000 } });
    const done = await settle("block", job.id as string);
    expect(done).toMatchObject({ status: "COMPLETED", output: { blocked: 5000 } });
    const health = (await api("block", "/health")).jobs as Record<string, number>;
    expect(health.retried).toBe(0);
  });
});

describe("SIGTERM under load", () => {
  it("finishes in-flight jobs, fails the unfinished after the grace period, takes nothing new, exits 0", async () => {
    const worker = startWorker("load", "test/fixtures/slow.ts", "w-load", { FLASH_GRACE_PERIOD: "3" });
    const long = [
      await api("load", "/run", { input: { ms: 60_000 } }),
      await api("load", "/run", { input: { ms: 60_000 } }),
    ];
    const short: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 30; i++) short.push(await api("load", "/run", { input: { ms: 300 } }));
    const deadline = Date.now() + 60_000;
    while (((await api("load", "/health")).jobs as Record<string, number>).completed! < 6) {
      if (Date.now() > deadline) throw new Error("jobs did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);

    for (const job of long) {
      expect(await api("load", `/status/${job.id}`)).toMatchObject({
        status: "FAILED",
        error: "Worker shut down before the job finished (grace period of 3 s ran out).",
      });
    }
    // A take aborted by the signal can cross an answer already on the wire: the platform notices the
    // worker is gone and puts such a job back in the queue, so wait for nothing to be in progress.
    const settleBy = Date.now() + 30_000;
    while (((await api("load", "/health")).jobs as Record<string, number>).inProgress! > 0) {
      if (Date.now() > settleBy) throw new Error("jobs still in progress after the worker exited");
      await new Promise((r) => setTimeout(r, 100));
    }
    const states = await Promise.all(short.map((j) => api("load", `/status/${j.id}`)));
    const byStatus = (s: string) => states.filter((j) => j.status === s).length;
    // Every short job either finished or was never taken: none is left half-done.
    expect(byStatus("COMPLETED") + byStatus("IN_QUEUE")).toBe(short.length);
    expect(byStatus("IN_QUEUE")).toBeGreaterThan(0);
    expect(worker.stdout.some((l) => l.includes("SIGTERM received: no new jobs will be taken"))).toBe(true);
  });
});
