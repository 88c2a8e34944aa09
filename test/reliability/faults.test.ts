// 2,000 jobs through a proxy that breaks a fifth of the worker's requests on every route: every job
// still ends with exactly one result on the platform, and the worker's log shows the retries.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type Flash, flash } from "../process.js";
import { FaultProxy } from "./fault-proxy.js";

const JOBS = 2000;
let platform: Platform;
let proxy: FaultProxy;
let worker: Flash;

async function api(path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${platform.url}/v2/rel${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${platform.apiKey}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await res.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  platform = await startPlatform({ longPollMs: 1000, workerLostMs: 10_000, endpoints: [{ id: "rel" }] });
  proxy = await new FaultProxy(platform.url, {
    rate: { take: 0.2, "take-batch": 0.2, done: 0.2, stream: 0.2, stop: 0.2, ping: 0.2 },
    faults: ["500", "502", "503", "reset", "delay", "drop-after"],
    delayMs: 150,
    seed: 20261125,
  }).start();
  const env = Object.fromEntries(
    Object.entries(platform.workerEnv("rel", "w-faults")).map(([k, v]) => [
      k,
      v.replaceAll(platform.url, proxy.base),
    ]),
  );
  worker = flash(["start", "test/fixtures/reliable.ts"], { ...env, RUNPOD_PING_INTERVAL: "500" });
});

afterAll(async () => {
  worker?.child.kill("SIGKILL");
  await worker?.exited;
  await proxy?.close();
  await platform?.close();
});

describe("faults on every route", () => {
  it(`${JOBS} jobs at 20 % injected faults: none lost, none recorded twice`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const job = await api("/run", { input: { n: i, stream: i % 10 === 0, progress: i % 7 === 0 } });
      ids.push(job.id as string);
    }
    const deadline = Date.now() + 600_000;
    for (;;) {
      const health = (await api("/health")).jobs as Record<string, number>;
      if ((health.completed ?? 0) + (health.failed ?? 0) >= JOBS) break;
      if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify(health)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const health = (await api("/health")).jobs as Record<string, number>;
    // Exactly one result per job: the counters count each terminal job once, whatever was re-posted.
    expect((health.completed ?? 0) + (health.failed ?? 0)).toBe(JOBS);
    expect(health.inProgress).toBe(0);
    expect(health.inQueue).toBe(0);

    let completed = 0;
    for (let i = 0; i < JOBS; i++) {
      const status = await api(`/status/${ids[i]}`);
      if (status.status === "COMPLETED") {
        completed++;
        const expected =
          i % 10 === 0
            ? [
                { part: 1, n: i },
                { part: 2, n: i },
              ]
            : { n: i };
        expect(status.output).toStrictEqual(expected);
      } else {
        // Only a result or stream chunk that could not be delivered after every retry may fail (five faults
        // in a row on one post: about one run in eight meets one), and the error says which.
        expect(status.status).toBe("FAILED");
        expect(String(status.error)).toMatch(
          /Job result was not accepted|Stream chunk \d+ could not be delivered: .* failed after 5 attempts/,
        );
      }
    }
    expect(completed).toBeGreaterThanOrEqual(JOBS * 0.99);

    for (const route of ["take-batch", "done", "ping"] as const) {
      expect(proxy.log.filter((r) => r.route === route && r.fault !== "none").length).toBeGreaterThan(0);
    }
    expect(proxy.count("drop-after", "done")).toBeGreaterThan(0);
    const out = worker.stdout.join("\n");
    expect(out).toMatch(/Result post failed \(attempt 1 of 5\)/);
    expect(out).toMatch(/Failed to get job\./);
  }, 900_000);
});
