// A stray error in a queue worker (docs/design.md §4.10): the jobs in flight are answered FAILED with it, the
// worker takes nothing more, logs it at ERROR and exits 1, so the platform replaces it. Real platform, real worker.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type Flash, flash, freePort } from "../process.js";

let platform: Platform;
let worker: Flash | undefined;
let lbWorker: Flash | undefined;

async function api(path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${platform.url}/v2/stray${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${platform.apiKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, unknown>;
}

/** Polls the job's status until it is not `while` (deadline: the test's). */
async function statusOf(id: string, ...whileIn: string[]): Promise<Record<string, unknown>> {
  for (;;) {
    const job = await api(`/status/${id}`);
    if (!whileIn.includes(job.status as string)) return job;
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  platform = await startPlatform({
    longPollMs: 1000,
    endpoints: [{ id: "stray", executionTimeoutMs: 120_000 }],
  });
});

afterAll(async () => {
  for (const w of [worker, lbWorker]) w?.child.kill("SIGKILL");
  await Promise.all([worker?.exited, lbWorker?.exited]);
  await platform?.close();
});

describe("a stray error in a queue worker", () => {
  it("fails every job in flight with the error, takes nothing more, and exits 1", async () => {
    const waiting = await api("/run", { input: { mode: "wait" } });
    worker = flash(["start", "test/fixtures/stray-throw.ts"], {
      ...platform.workerEnv("stray", "w-stray"),
      RUNPOD_PING_INTERVAL: "300",
    });
    expect(await statusOf(waiting.id as string, "IN_QUEUE")).toMatchObject({ status: "IN_PROGRESS" });
    const boom = await api("/run", { input: { mode: "boom" } });
    const error = "Uncaught exception in the worker: Error: boom";
    expect(await statusOf(boom.id as string, "IN_QUEUE", "IN_PROGRESS")).toMatchObject({
      status: "FAILED",
      error,
    });
    expect(await statusOf(waiting.id as string, "IN_PROGRESS")).toMatchObject({ status: "FAILED", error });
    expect(await worker.exited).toBe(1);
    const output = [...worker.stdout, ...worker.stderr].join("\n");
    expect(output).toMatch(/\| ERROR \| .* \| Uncaught exception \| Error: boom\n\s+at /);
    expect(output).toMatch(/\| ERROR \| .* \| Worker exits after a stray error; the platform replaces it\./);
    // Nothing was taken after it: a job sent now waits for the next worker.
    const later = await api("/run", { input: { mode: "wait" } });
    expect(await api(`/status/${later.id}`)).toMatchObject({ status: "IN_QUEUE" });
  });
});

describe("a stray error in a load-balanced worker", () => {
  it("answers every request in flight 500 with the error, and exits 1", async () => {
    const port = await freePort();
    lbWorker = flash(["start", "test/fixtures/lb-stray-throw.ts"], {
      PORT: String(port),
      FLASH_LB_HOST: "127.0.0.1",
    });
    await lbWorker.waitForLine(/Endpoint stray-api ready/);
    const waiting = fetch(`http://127.0.0.1:${port}/wait`);
    // The /wait request is in flight before the throw (its timer fires 100 ms after /boom arrives).
    await new Promise((r) => setTimeout(r, 20));
    const boom = fetch(`http://127.0.0.1:${port}/boom`);
    const error = "Uncaught exception in the worker: Error: boom";
    for (const answer of await Promise.all([waiting, boom])) {
      expect(answer.status).toBe(500);
      expect(await answer.json()).toStrictEqual({ error });
    }
    expect(await lbWorker.exited).toBe(1);
    expect([...lbWorker.stdout, ...lbWorker.stderr].join("\n")).toMatch(
      /\| ERROR \| .* \| Uncaught exception \| Error: boom\n\s+at /,
    );
  });
});
