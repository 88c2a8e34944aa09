// Load-balanced routing with more than one worker: the platform's proxy (src/platform/workers/lb-proxy.ts) in
// front of real worker processes running test/fixtures/lb-workers.ts, whose answers name the worker that gave
// them. Which worker a request goes to, scale-up when every worker is busy, unhealthy workers skipped, and
// the 502, 503 and 504 answers.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LbEndpointInit } from "../../src/platform/index.js";
import { eventually, startTestPlatform, type TestPlatform } from "./helpers.js";

const FIXTURE = "test/fixtures/lb-workers.ts";
const TIMEOUT = 120_000;
const dir = mkdtempSync(join(tmpdir(), "flash-lb-routing-"));
/** A file that does not exist yet: requests (or a worker's start) wait until the test writes it. */
let gates = 0;
const gate = () => join(dir, `gate-${++gates}`);
const open = (file: string) => writeFileSync(file, "");

// Each group starts a platform with only the endpoint it uses: a mutation run (npm run mutate) reruns only the
// groups whose tests cover a mutant, so it need not start every group's workers each time.
let t: TestPlatform;
const platforms: TestPlatform[] = [];
function withEndpoint(endpoint: LbEndpointInit): void {
  beforeAll(async () => {
    t = await startTestPlatform({ lbReadyWaitMs: 1_500, loadBalanced: [endpoint] });
    platforms.push(t);
  }, TIMEOUT);
}
afterAll(async () => {
  // Whatever a failed test left blocked is let go, so the workers can stop.
  for (let n = 1; n <= gates; n++) open(join(dir, `gate-${n}`));
  open(join(dir, "cold-start"));
  await Promise.all(platforms.map((p) => p.platform.close()));
  rmSync(dir, { recursive: true, force: true });
}, TIMEOUT);

function call(endpoint: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${t.platform.url}/lb/${endpoint}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${t.platform.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function answeredBy(endpoint: string, path: string, body?: unknown): Promise<string> {
  const res = await call(endpoint, path, body);
  expect(res.status).toBe(200);
  return ((await res.json()) as { worker: string }).worker;
}

const workers = (endpoint: string) => t.platform.lb.get(endpoint)!.workerList();
const ready = (endpoint: string, n: number) =>
  eventually(
    () => workers(endpoint).filter((w) => w.state === "ready").length >= n,
    `${n} ready worker(s) of ${endpoint}`,
    60_000,
  );

describe("load-balanced routing across two workers", { timeout: TIMEOUT }, () => {
  withEndpoint({ id: "pair", file: FIXTURE, workers: [2, 2] });

  it("spreads requests over idle workers and sends the next one to the least busy", async () => {
    await ready("pair", 2);
    const ids = new Set(workers("pair").map((w) => w.id));
    // Idle workers take turns.
    const turns = new Set<string>();
    for (let i = 0; i < 4; i++) turns.add(await answeredBy("pair", "/who"));
    expect(turns).toEqual(ids);
    // One worker holds a request: the next request goes to the other one.
    const held = gate();
    const holding = answeredBy("pair", "/hold", { gate: held });
    const busy = await eventually(
      () => workers("pair").find((w) => w.inFlight === 1)?.id,
      "the held request to reach a worker",
    );
    for (let i = 0; i < 3; i++) expect(await answeredBy("pair", "/who")).not.toBe(busy);
    open(held);
    expect(await holding).toBe(busy);
  });

  it("skips a worker whose /ping stopped answering", async () => {
    await ready("pair", 2);
    const [stuck, healthy] = workers("pair");
    // Block the worker's event loop by calling it directly (its port from the platform's log), not through
    // the proxy: the proxy sees no request in flight on it, only /ping going unanswered.
    const port = Number(
      new RegExp(`Worker:${stuck!.id} \\| ready on port (\\d+)`).exec(t.lines.join("\n"))![1],
    );
    const held = gate();
    const blocked = fetch(`http://127.0.0.1:${port}/block`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ gate: held }),
    });
    await eventually(
      () => t.lines.some((l) => l.includes(`Worker:${stuck!.id} | unhealthy: /ping failed`)),
      "the blocked worker to be marked unhealthy",
      60_000,
    );
    expect(workers("pair").find((w) => w.id === stuck!.id)?.state).toBe("unhealthy");
    for (let i = 0; i < 4; i++) expect(await answeredBy("pair", "/who")).toBe(healthy!.id);
    open(held);
    expect((await blocked).status).toBe(200);
    await ready("pair", 2);
  });
});

describe("load-balanced scale-up", { timeout: TIMEOUT }, () => {
  withEndpoint({ id: "grows", file: FIXTURE, workers: [1, 2] });

  it("starts another worker (up to max) when every ready worker is busy, and sends it the next request", async () => {
    await ready("grows", 1);
    const [first] = workers("grows");
    const held = gate();
    // The only worker takes both; the second finds every worker busy and asks for one more.
    const a = answeredBy("grows", "/hold", { gate: held });
    const b = answeredBy("grows", "/hold", { gate: held });
    await ready("grows", 2);
    const second = workers("grows").find((w) => w.id !== first!.id)!;
    expect(await answeredBy("grows", "/who")).toBe(second.id);
    open(held);
    expect([await a, await b]).toEqual([first!.id, first!.id]);
  });
});

describe("load-balanced faults", { timeout: TIMEOUT }, () => {
  withEndpoint({ id: "faults", file: FIXTURE, workers: [1, 1], executionTimeoutMs: 1_000 });

  it("504 when a worker does not answer within the execution timeout, 502 when it dies mid-request", async () => {
    await ready("faults", 1);
    const [worker] = workers("faults");
    const held = gate();
    // Its event loop blocked, the worker cannot time the route out itself: the proxy answers.
    const late = await call("faults", "/block", { gate: held });
    expect(late.status).toBe(504);
    expect(await late.json()).toEqual({ error: "Execution timeout on faults after 1.0s" });
    open(held);
    await eventually(
      () => workers("faults").find((w) => w.id === worker!.id && w.state === "ready" && w.inFlight === 0),
      "the worker to be free again",
      60_000,
    );
    const died = await call("faults", "/exit", {});
    expect(died.status).toBe(502);
    expect(((await died.json()) as { error: string }).error).toMatch(new RegExp(`^Worker ${worker!.id}: `));
    // A new worker takes its place.
    await eventually(
      () => workers("faults").some((w) => w.id !== worker!.id && w.state === "ready"),
      "a replacement worker",
      60_000,
    );
    expect(await answeredBy("faults", "/who")).not.toBe(worker!.id);
  });
});

describe("load-balanced cold start", { timeout: TIMEOUT }, () => {
  withEndpoint({ id: "cold", file: FIXTURE, workers: [1, 1], env: { START_GATE: join(dir, "cold-start") } });

  it("503 when no worker is ready within the wait, then the request goes through once one is", async () => {
    // Its onStart hook waits for a file: /ping says 204 until then.
    await eventually(
      () => workers("cold")[0]?.state === "initializing",
      "the worker to be initializing",
      60_000,
    );
    const res = await call("cold", "/who");
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({
      error: "no workers available",
      message: "No worker of endpoint cold is ready (1 starting); try again shortly",
    });
    open(join(dir, "cold-start"));
    await ready("cold", 1);
    expect(await answeredBy("cold", "/who")).toBe(workers("cold")[0]!.id);
  });
});
