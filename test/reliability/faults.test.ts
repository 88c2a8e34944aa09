// 2,000 jobs through a proxy that breaks a fifth of the worker's requests on every route, at concurrency 8 and
// 32: every job ends COMPLETED with its computed output, and at the wire the worker never sent anything else as a
// job's final result (docs/protocol.md §4.5) — counted from the requests themselves, not the platform's dedupe.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type Flash, flash } from "../process.js";
import { FaultProxy } from "./fault-proxy.js";

const JOBS = 2000;

const expectedOutput = (i: number) =>
  i % 10 === 0
    ? [
        { part: 1, n: i },
        { part: 2, n: i },
      ]
    : { n: i };

/** The job id in a job-done or job-stream URL: /v2/<endpoint>/job-done/<worker>/<job>?… */
const jobOf = (url: string) => url.split("?")[0]!.split("/")[5]!;

describe.each([8, 32])("faults on every route, concurrency %i", (concurrency) => {
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
      seed: 20261125 + concurrency,
    }).start();
    const env = Object.fromEntries(
      Object.entries(platform.workerEnv("rel", "w-faults")).map(([k, v]) => [
        k,
        v.replaceAll(platform.url, proxy.base),
      ]),
    );
    worker = flash(["start", "test/fixtures/reliable.ts"], {
      ...env,
      RUNPOD_PING_INTERVAL: "500",
      FIXTURE_CONCURRENCY: String(concurrency),
    });
  });

  afterAll(async () => {
    worker?.child.kill("SIGKILL");
    await worker?.exited;
    await proxy?.close();
    await platform?.close();
  });

  it(`${JOBS} jobs at 20 % injected faults: none lost, none wrong, no error ever posted for a computed result`, async () => {
    const ids: string[] = [];
    const index = new Map<string, number>();
    for (let i = 0; i < JOBS; i++) {
      const job = await api("/run", { input: { n: i, stream: i % 10 === 0, progress: i % 7 === 0 } });
      ids.push(job.id as string);
      index.set(job.id as string, i);
    }
    const deadline = Date.now() + 600_000;
    for (;;) {
      const health = (await api("/health")).jobs as Record<string, number>;
      if ((health.completed ?? 0) + (health.failed ?? 0) >= JOBS) break;
      if (Date.now() > deadline) throw new Error(`not finished: ${JSON.stringify(health)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const health = (await api("/health")).jobs as Record<string, number>;
    expect(health).toMatchObject({ completed: JOBS, failed: 0, inProgress: 0, inQueue: 0 });
    for (let i = 0; i < JOBS; i++) {
      const status = await api(`/status/${ids[i]}`);
      expect({ id: ids[i], status: status.status, output: status.output }).toStrictEqual({
        id: ids[i],
        status: "COMPLETED",
        output: expectedOutput(i),
      });
    }

    // At the wire: every final job-done body the worker sent is the job's computed output, however many times
    // it had to be sent; the longest run of failed attempts on one result is reported.
    const finals = new Map<string, { bodies: unknown[]; failedInARow: number; longest: number }>();
    for (const record of proxy.log) {
      if (record.route !== "done" || record.body === undefined) continue;
      const body = JSON.parse(record.body) as { status?: string };
      if (body.status === "IN_PROGRESS") continue;
      const id = jobOf(record.url);
      const entry = finals.get(id) ?? { bodies: [], failedInARow: 0, longest: 0 };
      entry.bodies.push(body);
      const failed = record.fault !== "none" && record.fault !== "delay";
      entry.failedInARow = failed ? entry.failedInARow + 1 : 0;
      entry.longest = Math.max(entry.longest, entry.failedInARow);
      finals.set(id, entry);
    }
    expect(finals.size).toBe(JOBS);
    let posts = 0;
    let longest = 0;
    for (const [id, entry] of finals) {
      const i = index.get(id);
      expect(i, `job-done for an unknown job ${id}`).toBeDefined();
      for (const body of entry.bodies)
        expect({ id, body }).toStrictEqual({ id, body: { output: expectedOutput(i!) } });
      posts += entry.bodies.length;
      longest = Math.max(longest, entry.longest);
    }
    const injected = proxy.log.filter((r) => r.fault !== "none").length;
    console.log(
      `faults c=${concurrency}: ${proxy.log.length} requests, ${injected} faults injected (done: ${proxy.log.filter((r) => r.route === "done" && r.fault !== "none").length}, drop-after on done: ${proxy.count("drop-after", "done")}); ${posts} final result posts for ${JOBS} jobs; longest run of failed attempts on one result: ${longest}; 0 missing, 0 wrong`,
    );

    for (const route of ["take-batch", "done", "ping"] as const) {
      expect(proxy.log.filter((r) => r.route === route && r.fault !== "none").length).toBeGreaterThan(0);
    }
    expect(proxy.count("drop-after", "done")).toBeGreaterThan(0);
    const out = worker.stdout.join("\n");
    expect(out).toMatch(/Result post failed \(attempt 1\)/);
    expect(out).toMatch(/Failed to get job\./);
    expect(out).not.toMatch(/Job result was not accepted/);
  }, 900_000);
});
