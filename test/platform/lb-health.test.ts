// The health check where RunPod's load balancer polls it (serverless/load-balancing/overview, "Health checks"):
// PORT_HEALTH apart from PORT, HEALTH_CHECK_PATH instead of /ping, 204 while initializing and 200 when ready.
// Real worker processes (test/fixtures/lb-workers.ts) behind the local platform, which polls them there.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, startTestPlatform, type TestPlatform } from "./helpers.js";

const FIXTURE = "test/fixtures/lb-workers.ts";
const TIMEOUT = 120_000;
const dir = mkdtempSync(join(tmpdir(), "flash-lb-health-"));
const startGate = join(dir, "start");

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({
    loadBalanced: [
      {
        id: "apart",
        file: FIXTURE,
        workers: [1, 1],
        env: { PORT_HEALTH: "8081", HEALTH_CHECK_PATH: "/healthz", START_GATE: startGate },
      },
      { id: "path", file: FIXTURE, workers: [1, 1], env: { HEALTH_CHECK_PATH: "/healthz" } },
    ],
  });
}, TIMEOUT);
afterAll(async () => {
  writeFileSync(startGate, "");
  await t?.platform.close();
  rmSync(dir, { recursive: true, force: true });
}, TIMEOUT);

const workers = (endpoint: string) => t.platform.lb.get(endpoint)!.workerList();
/** The port a worker's log line names: "listening on" (PORT) or "Health checks on" (PORT_HEALTH). */
const portIn = (id: string, line: RegExp) =>
  eventually(
    () => {
      const found = t.lines.find((l) => l.includes(id) && line.test(l));
      const port = found ? /http:\/\/127\.0\.0\.1:(\d+)/.exec(found)?.[1] : undefined;
      return port ? Number(port) : undefined;
    },
    `worker ${id}'s line ${line}`,
    60_000,
  );

describe("health checks on PORT_HEALTH and HEALTH_CHECK_PATH", { timeout: TIMEOUT }, () => {
  it("answers HEALTH_CHECK_PATH on PORT_HEALTH: 204 while starting, then 200; the platform polls it there", async () => {
    const [worker] = await eventually(
      () => (workers("apart").length ? workers("apart") : undefined),
      "a worker",
    );
    const healthPort = await portIn(worker!.id, /Health checks on http:\/\/\S+\/healthz$/);
    const port = await portIn(worker!.id, /listening on http:/);
    expect(healthPort).not.toBe(port);
    // The onStart hook waits for the gate: initializing, on the health port as the platform sees it.
    await eventually(() => workers("apart")[0]?.state === "initializing", "the platform to see 204", 60_000);
    const starting = await fetch(`http://127.0.0.1:${healthPort}/healthz`);
    expect(starting.status).toBe(204);
    expect(
      t.lines.some((l) =>
        l.includes(`Worker:${worker!.id} | initializing (/healthz on port ${healthPort} 204)`),
      ),
    ).toBe(true);
    writeFileSync(startGate, "");
    await eventually(() => workers("apart")[0]?.state === "ready", "the worker to be ready", 60_000);
    expect(
      t.lines.some((l) =>
        l.includes(`Worker:${worker!.id} | ready on port ${port} (/healthz on port ${healthPort} 200)`),
      ),
    ).toBe(true);
    const ready = await fetch(`http://127.0.0.1:${healthPort}/healthz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: "healthy" });
    // /ping still answers on PORT; the health port serves nothing else.
    expect((await fetch(`http://127.0.0.1:${port}/ping`)).status).toBe(200);
    const other = await fetch(`http://127.0.0.1:${healthPort}/who`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ error: "This is the health port: it serves only GET /healthz" });
    // Requests go to the worker as usual.
    const res = await fetch(`${t.platform.url}/lb/apart/who`, {
      headers: { authorization: `Bearer ${t.platform.apiKey}` },
    });
    expect(await res.json()).toEqual({ worker: worker!.id });
  });

  it("HEALTH_CHECK_PATH alone: the path answers as /ping does, on PORT", async () => {
    await eventually(() => workers("path")[0]?.state === "ready", "the worker to be ready", 60_000);
    const [worker] = workers("path");
    expect(
      t.lines.some((l) => l.includes(`Worker:${worker!.id} | ready on port`) && l.endsWith("(/healthz 200)")),
    ).toBe(true);
    const port = await portIn(worker!.id, /listening on http:/);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual(await (await fetch(`http://127.0.0.1:${port}/ping`)).json());
  });
});
