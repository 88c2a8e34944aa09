// The worker pool: processes spawned with the worker environment, output relayed, crashes restarted,
// scale from zero and back, and endpoints with workers made from a handler file.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT } from "./cli.js";
import { eventually, type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

const TIMEOUT = 120_000;
const node = (script: string) => [process.execPath, "-e", script];

let t: TestPlatform | undefined;
afterEach(async () => {
  await t?.platform.close();
  t = undefined;
}, TIMEOUT);

describe("worker pool", () => {
  it(
    "gives each worker the RUNPOD_* environment pointing at the platform, and relays its output",
    async () => {
      const script = `
        const pick = (k) => process.env[k];
        console.log(JSON.stringify(Object.fromEntries(["RUNPOD_WEBHOOK_GET_JOB", "RUNPOD_WEBHOOK_POST_OUTPUT",
          "RUNPOD_WEBHOOK_POST_STREAM", "RUNPOD_WEBHOOK_PING", "RUNPOD_POD_ID", "RUNPOD_AI_API_KEY",
          "RUNPOD_PING_INTERVAL", "EXTRA"].map((k) => [k, pick(k)]))));
        console.error("to stderr");
        setInterval(() => {}, 1000);`;
      t = await startTestPlatform({
        pingIntervalMs: 2_000,
        endpoints: [{ id: "envs", command: node(script), workers: [1, 1], env: { EXTRA: "yes" } }],
      });
      const [workerId] = await eventually(() => {
        const ids = t!.platform.pool("envs")?.workerIds ?? [];
        return ids.length === 1 ? ids : undefined;
      }, "the worker");
      const line = await eventually(
        () => t!.lines.find((l) => l.includes(`| INFO | ${workerId} | {`)),
        "the worker's stdout",
      );
      const env = JSON.parse(line.slice(line.indexOf("{"))) as Record<string, string>;
      const base = `${t.platform.url}/v2/envs`;
      expect(env).toEqual({
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=local`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=local`,
        RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=local`,
        RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=local`,
        RUNPOD_POD_ID: workerId,
        // The worker printed the platform's key; the platform log shows it redacted (src/log/redact.ts).
        RUNPOD_AI_API_KEY: "***",
        RUNPOD_PING_INTERVAL: "2000",
        EXTRA: "yes",
      });
      await eventually(() => t!.lines.some((l) => l.includes(`| WARN | ${workerId} | to stderr`)), "stderr");
    },
    TIMEOUT,
  );

  it(
    "kills a worker that has not asked for a job within RUNPOD_INIT_TIMEOUT, even one whose event loop is blocked",
    async () => {
      t = await startTestPlatform({
        workerInitTimeoutMs: 1_500,
        endpoints: [{ id: "stuck", command: node("while (true) {}"), workers: [1, 1] }],
      });
      const line = await eventually(
        () => t!.lines.find((l) => l.includes("not ready after RUNPOD_INIT_TIMEOUT (1.5 s)")),
        "the init-timeout line",
        60_000,
      );
      expect(line).toMatch(
        /\| ERROR \| .*Worker:\w+ \| not ready after RUNPOD_INIT_TIMEOUT \(1\.5 s\): unhealthy; killing it/,
      );
      await eventually(() => t!.lines.some((l) => /\| exited with signal SIGKILL$/.test(l)), "the kill");
    },
    TIMEOUT,
  );

  it(
    "an endpoint's own start limit (a model server's startTimeout under flash dev) replaces the platform's",
    async () => {
      t = await startTestPlatform({
        workerInitTimeoutMs: 600_000,
        endpoints: [{ id: "slow", command: node("while (true) {}"), workers: [1, 1], initTimeoutMs: 1_200 }],
      });
      const line = await eventually(
        () => t!.lines.find((l) => l.includes("not ready after RUNPOD_INIT_TIMEOUT (1.2 s)")),
        "the endpoint's own limit",
        60_000,
      );
      expect(line).toMatch(
        /Worker:\w+ \| not ready after RUNPOD_INIT_TIMEOUT \(1\.2 s\): unhealthy; killing it/,
      );
    },
    TIMEOUT,
  );

  it(
    "restarts a worker that crashes, backing off when it keeps crashing",
    async () => {
      t = await startTestPlatform({
        endpoints: [{ id: "crashy", command: node("process.exit(3)"), workers: [1, 1] }],
      });
      await eventually(
        () => t!.lines.filter((l) => /\| exited with code 3$/.test(l)).length >= 3,
        "three crashes",
        60_000,
      );
      // The second crash in a row: a share of 1 s, jittered down by up to half.
      const wait = t.lines
        .map((l) => /crashed 2 time\(s\) in a row; next start in (\d+) ms/.exec(l)?.[1])
        .find(Boolean);
      expect(Number(wait)).toBeGreaterThanOrEqual(500);
      expect(Number(wait)).toBeLessThanOrEqual(1000);
      // The dead workers count as unhealthy: in /health, and in the console's card and worker list.
      const auth = { authorization: `Bearer ${t.platform.apiKey}` };
      const health = (await (await fetch(`${t.base("crashy")}/health`, { headers: auth })).json()) as {
        workers: { unhealthy: number };
      };
      expect(health.workers.unhealthy).toBeGreaterThanOrEqual(1);
      const { token } = (await (
        await fetch(`${t.platform.url}/console/api/token`, { method: "POST", headers: auth })
      ).json()) as { token: string };
      const controller = new AbortController();
      const events = await fetch(`${t.platform.url}/console/api/events?token=${token}`, {
        signal: controller.signal,
      });
      const reader = events.body!.getReader();
      let text = "";
      while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      const data = text.split("\n").find((l) => l.startsWith("data:"))!;
      const snapshot = JSON.parse(data.slice(5)) as {
        endpoints: {
          id: string;
          workersUnhealthy: number;
          workerList: { state: string; unhealthy?: string }[];
        }[];
      };
      const card = snapshot.endpoints.find((e) => e.id === "crashy")!;
      expect(card.workersUnhealthy).toBeGreaterThanOrEqual(1);
      expect(card.workerList).toContainEqual(
        expect.objectContaining({
          state: "unhealthy",
          unhealthy: expect.stringMatching(/^exited with code 3; crashed \d+ time\(s\) in a row$/),
        }),
      );
    },
    TIMEOUT,
  );

  it(
    "logs a worker command that cannot start, and keeps serving",
    async () => {
      t = await startTestPlatform({
        endpoints: [{ id: "missing", command: ["/nonexistent/worker-binary"], workers: [1, 1] }],
      });
      await eventually(
        () => t!.lines.some((l) => l.includes("could not start: spawn /nonexistent")),
        "the error",
      );
      const health = await fetch(`${t.base("missing")}/health`, {
        headers: { authorization: `Bearer ${t.platform.apiKey}` },
      });
      expect(health.status).toBe(200);
    },
    TIMEOUT,
  );

  it(
    "an endpoint made from a handler file scales from zero for a job and back to zero when idle",
    async () => {
      t = await startTestPlatform();
      const created = t.platform.createEndpoint({
        id: "echo",
        file: "examples/echo/handler.ts",
        cwd: ROOT,
        workers: [0, 2],
        idleTimeoutMs: 500,
      });
      expect(created.command).toContain(join(ROOT, "examples/echo/handler.ts"));
      expect(t.platform.pool("echo")?.size).toBe(0);
      const answer = await fetch(`${t.base("echo")}/runsync`, {
        method: "POST",
        headers: { authorization: `Bearer ${t.platform.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ input: { cold: true } }),
      });
      const job = (await answer.json()) as JobJson;
      expect(job).toMatchObject({ status: "COMPLETED", output: { cold: true } });
      // The cold start is part of the delay, as on the platform.
      expect(job.delayTime).toBeGreaterThan(0);
      await eventually(() => t!.platform.pool("echo")?.size === 0, "the idle worker to stop", 60_000);
      await eventually(
        () => t!.lines.some((l) => /Worker:\w+ \| stopped \(code 0\)$/.test(l)),
        "a clean stop",
      );

      expect(await t.platform.deleteEndpoint("echo")).toBe(true);
      expect(t.platform.pool("echo")).toBeUndefined();
    },
    TIMEOUT,
  );
});
