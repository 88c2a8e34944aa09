// Worker affinity on load-balanced endpoints (RunPod's serverless/load-balancing/worker-affinity): every answer
// names its worker in X-Runpod-Worker-Id, and a request sending it back is routed soft, strict or strict-resume.
// The platform's proxy in front of real worker processes running test/fixtures/lb-workers.ts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startTestPlatform, type TestPlatform } from "./helpers.js";

const FIXTURE = "test/fixtures/lb-workers.ts";
const TIMEOUT = 120_000;
const dir = mkdtempSync(join(tmpdir(), "flash-lb-affinity-"));
let gates = 0;
const gate = () => join(dir, `gate-${++gates}`);
const open = (file: string) => writeFileSync(file, "");

// Two platforms: one whose strict wait outlasts any test (a waiting request is let through), one whose wait
// is short (the 400).
let t: TestPlatform;
let short: TestPlatform;
beforeAll(async () => {
  [t, short] = await Promise.all([
    startTestPlatform({
      lbAffinityWaitMs: 60_000,
      loadBalanced: [{ id: "sticky", file: FIXTURE, workers: [2, 2], workerConcurrency: 1 }],
    }),
    startTestPlatform({
      lbAffinityWaitMs: 1_000,
      loadBalanced: [{ id: "busy", file: FIXTURE, workers: [1, 1], workerConcurrency: 1 }],
    }),
  ]);
}, TIMEOUT);
afterAll(async () => {
  for (let n = 1; n <= gates; n++) open(join(dir, `gate-${n}`));
  await Promise.all([t?.platform.close(), short?.platform.close()]);
  rmSync(dir, { recursive: true, force: true });
}, TIMEOUT);

function call(p: TestPlatform, endpoint: string, path: string, pin?: string, body?: unknown) {
  return fetch(`${p.platform.url}/lb/${endpoint}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${p.platform.apiKey}`,
      ...(pin === undefined ? {} : { "x-runpod-worker-id": pin }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** The worker that answered, from the body, checked against the X-Runpod-Worker-Id header. */
async function answeredBy(res: Response): Promise<string> {
  expect(res.status).toBe(200);
  const { worker } = (await res.json()) as { worker: string };
  expect(res.headers.get("x-runpod-worker-id")).toBe(worker);
  return worker;
}

const workers = (p: TestPlatform, endpoint: string) => p.platform.lb.get(endpoint)!.workerList();
const ready = (p: TestPlatform, endpoint: string, n: number) =>
  eventually(
    () => workers(p, endpoint).filter((w) => w.state === "ready" && w.inFlight === 0).length >= n,
    `${n} idle ready worker(s) of ${endpoint}`,
    60_000,
  );

describe("worker affinity (X-Runpod-Worker-Id)", { timeout: TIMEOUT }, () => {
  it("names the worker on every answer; soft affinity sends the request there", async () => {
    await ready(t, "sticky", 2);
    const [a, b] = workers(t, "sticky");
    // Without a pin the idle workers take turns; pinned, every request goes to the one named.
    for (const pinned of [a!.id, b!.id])
      for (let i = 0; i < 3; i++)
        expect(await answeredBy(await call(t, "sticky", "/who", pinned))).toBe(pinned);
    // An empty header is no pin; an unknown worker is best effort: the request still goes through.
    await answeredBy(await call(t, "sticky", "/who", ""));
    expect([a!.id, b!.id]).toContain(await answeredBy(await call(t, "sticky", "/who", "no-such-worker")));
  });

  it("soft falls back when its worker is at capacity; strict waits for it and gets it once free", async () => {
    await ready(t, "sticky", 2);
    const [a, b] = workers(t, "sticky");
    const held = gate();
    const holding = call(t, "sticky", "/hold", `strict ${a!.id}`, { gate: held });
    await eventually(() => workers(t, "sticky").find((w) => w.id === a!.id)?.inFlight === 1, "A to be busy");
    // A takes one request at a time: soft goes to B, strict waits for A.
    expect(await answeredBy(await call(t, "sticky", "/who", a!.id))).toBe(b!.id);
    const waiting = call(t, "sticky", "/who", `strict ${a!.id}`);
    expect(await answeredBy(await call(t, "sticky", "/who", `strict ${b!.id}`))).toBe(b!.id);
    open(held);
    expect(await answeredBy(await holding)).toBe(a!.id);
    expect(await answeredBy(await waiting)).toBe(a!.id);
  });

  it("strict and strict-resume to a worker that exited: 404 affinity_worker_gone", async () => {
    await ready(t, "sticky", 2);
    const [a] = workers(t, "sticky");
    const died = await call(t, "sticky", "/exit", `strict ${a!.id}`, {});
    expect(died.status).toBe(502);
    expect(died.headers.get("x-runpod-worker-id")).toBe(a!.id);
    await eventually(() => !workers(t, "sticky").some((w) => w.id === a!.id), "A to be gone");
    for (const pin of [`strict ${a!.id}`, `strict-resume ${a!.id}`, "strict never-was"]) {
      const res = await call(t, "sticky", "/who", pin);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: "affinity_worker_gone", worker: pin.split(" ")[1] });
    }
    // Soft to the same worker falls back to another.
    expect(await answeredBy(await call(t, "sticky", "/who", a!.id))).not.toBe(a!.id);
  });

  it("a malformed X-Runpod-Worker-Id is a 400 naming the forms it takes", async () => {
    const res = await call(t, "sticky", "/who", "sticky abc");
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error:
        'Invalid X-Runpod-Worker-Id "sticky abc": expected "<worker-id>", "strict <worker-id>" or "strict-resume <worker-id>"',
    });
  });

  it("strict: 400 timed out waiting for worker when its worker stays busy past the wait", async () => {
    await ready(short, "busy", 1);
    const [a] = workers(short, "busy");
    const held = gate();
    const holding = call(short, "busy", "/hold", undefined, { gate: held });
    await eventually(() => workers(short, "busy")[0]?.inFlight === 1, "the worker to be busy");
    const res = await call(short, "busy", "/who", `strict ${a!.id}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: "timed out waiting for worker",
      reason: "worker_timeout",
      worker: a!.id,
    });
    open(held);
    expect(await answeredBy(await holding)).toBe(a!.id);
  });
});
