// A stray error in a queue worker (docs/design.md §4.10): the jobs in flight are answered FAILED with it, the
// worker takes nothing more, logs it at ERROR and exits 1, so the platform replaces it. Real platform, real worker.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type Flash, flash } from "../process.js";

let platform: Platform;
let worker: Flash | undefined;

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
  worker?.child.kill("SIGKILL");
  await worker?.exited;
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
