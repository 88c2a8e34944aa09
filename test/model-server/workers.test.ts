// Model servers under the local platform's worker pool (issue 44, items 4-5): several workers, each with its own
// server on a free port (`port: 0`), all ready with no crash; and a worker is ready (health, REST, console, its
// start line) only once its server answers its health check, so its cold start includes the load. Needs dist/.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT } from "../platform/cli.js";
import { eventually, type JobJson, startTestPlatform, type TestPlatform } from "../platform/helpers.js";

const TIMEOUT = 180_000;
const HANDLER = "test/fixtures/model-server/handler.ts";

interface HealthJson {
  workers: { idle: number; ready: number; initializing: number; running: number; unhealthy: number };
}

let t: TestPlatform | undefined;
afterEach(async () => {
  await t?.platform.close();
  t = undefined;
}, TIMEOUT);

const health = async (p: TestPlatform, id: string): Promise<HealthJson> =>
  (await (await fetch(`${p.base(id)}/health`, { headers: auth(p) })).json()) as HealthJson;

const auth = (p: TestPlatform) => ({ authorization: `Bearer ${p.platform.apiKey}` });

/** The console's first snapshot of one endpoint's workers. */
async function consoleWorkers(p: TestPlatform, id: string) {
  const { token } = (await (
    await fetch(`${p.platform.url}/console/api/token`, { method: "POST", headers: auth(p) })
  ).json()) as { token: string };
  const controller = new AbortController();
  const events = await fetch(`${p.platform.url}/console/api/events?token=${token}`, {
    signal: controller.signal,
  });
  const reader = events.body!.getReader();
  let text = "";
  while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
  controller.abort();
  const data = text.split("\n").find((l) => l.startsWith("data:"))!;
  const snapshot = JSON.parse(data.slice(5)) as {
    endpoints: { id: string; workerList: { state: string; startedAt?: number; coldStartMs?: number }[] }[];
  };
  return snapshot.endpoints.find((e) => e.id === id)!.workerList;
}

describe("model servers in the worker pool", () => {
  it(
    "three workers with port: 0 each start a server on a port of their own; all are ready and serve jobs, none crashes",
    async () => {
      t = await startTestPlatform();
      t.platform.createEndpoint({
        id: "three",
        file: HANDLER,
        cwd: ROOT,
        workers: [3, 3],
        env: { FIXTURE_PORT: "0", FIXTURE_LOAD_SECONDS: "0.5" },
      });
      await eventually(
        async () => (await health(t!, "three")).workers.ready === 3,
        "three ready workers",
        120_000,
      );
      const ports = t.lines
        .map((l) => /Starting model server 'fixture-llm' \(pid \d+\): .* \(port (\d+)\)$/.exec(l)?.[1])
        .filter(Boolean);
      expect(new Set(ports).size).toBe(3);
      expect(ports).not.toContain("0");
      const jobs = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(async (n) => {
          const answer = await fetch(`${t!.base("three")}/runsync`, {
            method: "POST",
            headers: { ...auth(t!), "content-type": "application/json" },
            body: JSON.stringify({ input: { messages: [{ role: "user", content: `hi ${n}` }] } }),
          });
          return (await answer.json()) as JobJson;
        }),
      );
      expect(jobs.map((j) => j.status)).toEqual(Array(6).fill("COMPLETED"));
      expect((await health(t, "three")).workers).toMatchObject({ ready: 3, initializing: 0, unhealthy: 0 });
      expect(t.lines.filter((l) => /already in use|exited with|crashed/.test(l))).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    "two load-balanced workers with port: 0 each proxy to a server of their own; both ready, none crashes",
    async () => {
      t = await startTestPlatform();
      t.platform.createLbEndpoint({
        id: "lb-two",
        file: "test/fixtures/model-server/endpoint.ts",
        cwd: ROOT,
        workers: [2, 2],
        env: { FIXTURE_PORT: "0", FIXTURE_LOAD_SECONDS: "0.5" },
      });
      await eventually(() => t!.platform.lb.get("lb-two")?.ready === 2, "two ready workers", 120_000);
      const ports = t.lines
        .map((l) => /Starting model server 'fixture-llm' \(pid \d+\): .* \(port (\d+)\)$/.exec(l)?.[1])
        .filter(Boolean);
      expect(new Set(ports).size).toBe(2);
      for (const _ of [1, 2, 3, 4]) {
        const models = await fetch(`${t.platform.url}/lb/lb-two/v1/models`, { headers: auth(t) });
        const body = await models.json();
        expect(body, JSON.stringify(body)).toMatchObject({ data: [{ id: "fixture-model" }] });
      }
      expect(t.lines.filter((l) => /already in use|exited with|crashed/.test(l))).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    "a worker whose server is loading pings but is not ready; once the server answers 200 it is, its cold start included",
    async () => {
      const gate = join(mkdtempSync(join(tmpdir(), "flash-ms-ready-")), "loaded");
      t = await startTestPlatform({ pingIntervalMs: 500 });
      t.platform.createEndpoint({
        id: "slow",
        file: HANDLER,
        cwd: ROOT,
        workers: [1, 1],
        env: { FIXTURE_PORT: "0", FIXTURE_READY_FILE: gate },
      });
      // The worker has called the platform (its heartbeat) while its server still answers 503.
      const endpoint = t.platform.scheduler.endpoint("slow")!;
      const [workerId] = await eventually(
        () => {
          const ids = [...endpoint.workers.keys()];
          return ids.length === 1 ? ids : undefined;
        },
        "the worker's first ping",
        120_000,
      );
      expect(existsSync(gate)).toBe(false);
      expect((await health(t, "slow")).workers).toMatchObject({ idle: 0, ready: 0, initializing: 1 });
      expect((await consoleWorkers(t, "slow"))[0]).toMatchObject({ state: "starting" });
      expect((await consoleWorkers(t, "slow"))[0]?.coldStartMs).toBeUndefined();
      expect(t.lines.some((l) => l.includes("Worker started in"))).toBe(false);

      const loadedAt = Date.now();
      writeFileSync(gate, "");
      await eventually(
        async () => (await health(t!, "slow")).workers.ready === 1,
        "the ready worker",
        60_000,
      );
      const ready = t.lines.findIndex((l) =>
        l.includes(`${workerId} | worker | Model server 'fixture-llm' is ready.`),
      );
      const started = t.lines.findIndex((l) => l.includes(`${workerId} | worker | Worker started in`));
      expect(ready).toBeGreaterThanOrEqual(0);
      expect(started).toBeGreaterThan(ready);
      expect(t.lines[started]).toMatch(/, model server \d+ ms$/);
      // The console's cold start ends after the server answered, not at the worker's first ping.
      const [worker] = await consoleWorkers(t, "slow");
      expect(worker?.state).toBe("idle");
      expect(worker!.startedAt! + worker!.coldStartMs!).toBeGreaterThanOrEqual(loadedAt);
    },
    TIMEOUT,
  );
});
