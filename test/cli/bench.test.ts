// `flash bench` against a real `flash dev` of examples/echo on 127.0.0.1: its figures agree with the platform's own
// records (/metrics: jobs by status, execution and delay seconds, worker-seconds and starts), failures are counted
// by kind, and the cost is the catalog's serverless price × the worker-seconds.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Flash, flash, flashRun, freePort, ROOT } from "../process.js";

const KEY = "bench-key";
let dev: Flash;
let base: string;
const dir = mkdtempSync(join(ROOT, "test-artifacts-bench-"));
const catalogFile = join(dir, "catalog.json");

/** The catalog answer of RunPod's OpenAPI document (RTX 4090: serverless $1.1 per GPU-hour). */
const spec = JSON.parse(readFileSync(join(ROOT, "test/fixtures/runpod-rest-v2.openapi.json"), "utf8"));
const catalog =
  spec.paths["/v2/catalog/gpus"].get.responses["200"].content["application/json"].examples.gpus.value;

beforeAll(async () => {
  writeFileSync(catalogFile, JSON.stringify(catalog));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  // Scale to zero: the run starts the workers, and they are gone once it settles, so every worker-second is its.
  dev = flash([
    "dev",
    "examples/echo/handler.ts",
    "--port",
    String(port),
    "--api-key",
    KEY,
    "--workers",
    "0,2",
  ]);
  await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
}, 90_000);

afterAll(async () => {
  dev?.child.kill("SIGINT");
  await dev?.exited;
  rmSync(dir, { recursive: true, force: true });
});

interface Counters {
  jobs: Record<string, number>;
  execution: number;
  delay: number;
  workerSeconds: number;
  starts: number;
}

/** The platform's own records for the echo endpoint, read from its Prometheus text. */
async function counters(at = base, endpoint = "echo"): Promise<Counters> {
  const text = await (await fetch(`${at}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text();
  const one = (series: string) => Number(new RegExp(`^${series} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  const jobs: Record<string, number> = {};
  for (const m of text.matchAll(/^flash_jobs_total\{endpoint="([\w-]+)",status="(\w+)"\} (\S+)$/gm))
    if (m[1] === endpoint) jobs[m[2]!] = Number(m[3]);
  return {
    jobs,
    execution: one(`flash_job_execution_seconds_sum\\{endpoint="${endpoint}"\\}`),
    delay: one(`flash_job_delay_seconds_sum\\{endpoint="${endpoint}"\\}`),
    workerSeconds: one(`flash_worker_seconds_total\\{endpoint="${endpoint}"\\}`),
    starts: one(`flash_worker_starts_total\\{endpoint="${endpoint}"\\}`),
  };
}

const within2 = (measured: number, recorded: number) =>
  expect(Math.abs(measured - recorded)).toBeLessThanOrEqual(Math.max(0.02 * recorded, 0.001));

async function bench(endpoint: string, input: unknown, ...args: string[]) {
  const file = join(dir, `input-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ input }));
  const run = await flashRun([
    "bench",
    endpoint,
    "--input",
    file,
    "--api-url",
    base,
    "--api-key",
    KEY,
    "--settle",
    "30s",
    "--json",
    ...args,
  ]);
  expect(run.stderr).not.toContain("✗");
  return { code: run.code, report: JSON.parse(run.stdout) };
}

describe("flash bench on flash dev", { timeout: 120_000 }, () => {
  it("reports what the platform recorded: jobs, delay and execution, worker-seconds, within 2 %", async () => {
    const before = await counters();
    // 6/s of half-second jobs on at most 2 workers: the queue grows, so delay and execution both count.
    const { code, report } = await bench(
      "echo",
      { mock_delay: 0.5 },
      "--rate",
      "6/s",
      "--duration",
      "4s",
      "--gpu",
      "RTX 4090",
      "--catalog",
      catalogFile,
    );
    const after = await counters();
    expect(code).toBe(0);
    expect(report.endpoint.id).toBe("echo");
    expect(report.requests.sent).toBe(24);
    const completed = (after.jobs.COMPLETED ?? 0) - (before.jobs.COMPLETED ?? 0);
    expect(report.requests.completed).toBe(completed);
    expect(report.requests.failed).toBe(0);
    expect(report.failures).toEqual([]);
    within2(report.latency.execution.total / 1000, after.execution - before.execution);
    within2(report.latency.delay.total / 1000, after.delay - before.delay);
    // Workers settled to zero: the platform's count stopped with them.
    expect(report.workers.settled).toBe(true);
    expect(report.workers.source).toBe("platform");
    within2(report.workers.seconds, after.workerSeconds - before.workerSeconds);
    expect(report.workers.started).toBe(after.starts - before.starts);
    // From zero workers, the first job waited for one; no more cold starts than workers started.
    expect(report.coldStarts).toBeGreaterThanOrEqual(1);
    expect(report.coldStarts).toBeLessThanOrEqual(report.workers.started);
    expect(report.workers.max).toBeGreaterThanOrEqual(1);
    expect(report.workers.max).toBeLessThanOrEqual(2);
    // The samples' estimate is what a deployed endpoint gets; here it is checked only for being of the same order.
    expect(report.workers.sampledSeconds).toBeGreaterThan(0);
    // Cost: $1.1 per GPU-hour × the worker-seconds, spread over the completed requests.
    const [gpu] = report.cost.gpus;
    expect(gpu.gpu).toBe("NVIDIA GeForce RTX 4090");
    expect(gpu.pricePerHour).toBe(1.1);
    expect(gpu.total).toBeCloseTo((1.1 * report.workers.seconds) / 3600, 9);
    expect(gpu.per1000).toBeCloseTo((gpu.total / completed) * 1000, 9);
    expect(report.generator.cpuPercent).toBeGreaterThanOrEqual(0);
  });

  it("counts failures by kind, never averaged into the completed ones", async () => {
    const before = await counters();
    const { report } = await bench(
      "echo",
      { mock_error: "boom" },
      "--concurrency",
      "2",
      "--requests",
      "6",
      "--duration",
      "30s",
    );
    const after = await counters();
    expect(report.requests).toEqual({ sent: 6, completed: 0, failed: 6 });
    expect((after.jobs.FAILED ?? 0) - (before.jobs.FAILED ?? 0)).toBe(6);
    expect(report.failures).toHaveLength(1);
    expect(report.failures[0].kind).toBe("FAILED");
    expect(report.failures[0].count).toBe(6);
    expect(report.failures[0].example).toContain("boom");
    expect(report.cost.note).toBe("no GPU to price: name one with --gpu (a catalog id, name or pool)");
  });

  it("says which endpoint it cannot find, and which there are", async () => {
    const run = await flashRun([
      "bench",
      "nope",
      "--api-url",
      base,
      "--api-key",
      KEY,
      "--input",
      "examples/echo/test_input.json",
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`✗ No endpoint named nope on ${base} (there: echo)`);
  });

  it("finds an endpoint made through REST v2, prices its own GPUs from the API's catalog, and counts a job never answered as unfinished", async () => {
    // Its image cannot be pulled: the job waits in the queue for a worker that never comes.
    const created = await fetch(`${base}/v2/serverless`, {
      method: "POST",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "gpu-queue",
        type: "QUEUE",
        image: "127.0.0.1:1/app:1",
        gpu: { pools: ["ADA_24"] },
        workers: { min: 0, max: 1 },
        scaling: { type: "QUEUE_DELAY", queueDelay: 4 },
      }),
    });
    expect(created.status).toBe(201);
    const { report } = await bench(
      "gpu-queue",
      { x: 1 },
      "--requests",
      "1",
      "--duration",
      "1s",
      "--wait",
      "1s",
      "--settle",
      "1s",
    );
    expect(report.endpoint.name).toBe("gpu-queue");
    expect(report.requests).toEqual({ sent: 1, completed: 0, failed: 1 });
    expect(report.failures.map((f: { kind: string }) => f.kind)).toEqual(["unfinished"]);
    // The endpoint's pool, ADA_24, from its REST record; the local platform's catalog prices it at $0.
    expect(report.cost.catalog).toBe(`${base}/v2/catalog/gpus`);
    expect(report.cost.gpus.map((g: { gpu: string; pool: string }) => [g.gpu, g.pool])).toEqual([
      ["NVIDIA GeForce RTX 4090", "ADA_24"],
    ]);
    expect(report.cost.gpus[0].total).toBe(0);
    expect(report.cost.gpus[0].per1000).toBeNull();
  });
});

describe("flash bench on flash dev's model server", { timeout: 150_000 }, () => {
  let server: Flash;
  let at: string;

  beforeAll(async () => {
    const port = await freePort();
    at = `http://127.0.0.1:${port}`;
    // The vLLM-shaped FastAPI fixture, loading for a second: the first jobs wait for it.
    server = flash(
      [
        "dev",
        "examples/model-server/handler.ts",
        "--port",
        String(port),
        "--api-key",
        KEY,
        "--workers",
        "0,2",
      ],
      {
        MODEL_SERVER_COMMAND: "/usr/bin/python3 test/fixtures/model-server/openai_server.py {port}",
        FIXTURE_LOAD_SECONDS: "1",
      },
    );
    await server.waitForLine(/^Ready\. Try: curl/, 60_000);
  }, 90_000);

  afterAll(async () => {
    server?.child.kill("SIGINT");
    await server?.exited;
  });

  it("without an ENDPOINT benches the only one, its figures the platform's within 2 %", async () => {
    const before = await counters(at, "model-server");
    const run = await flashRun(
      ["bench", "--api-url", at, "--api-key", KEY, "--concurrency", "3", "--duration", "4s", "--json"],
      {},
      join(ROOT, "examples/model-server"),
    );
    const after = await counters(at, "model-server");
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.endpoint.id).toBe("model-server");
    expect(report.requests.failed).toBe(0);
    expect(report.requests.completed).toBe((after.jobs.COMPLETED ?? 0) - (before.jobs.COMPLETED ?? 0));
    within2(report.latency.execution.total / 1000, after.execution - before.execution);
    within2(report.latency.delay.total / 1000, after.delay - before.delay);
    within2(report.workers.seconds, after.workerSeconds - before.workerSeconds);
    // The model server's load is inside the first jobs' delay: each new worker's first job waited for it.
    expect(report.coldStarts).toBeGreaterThanOrEqual(1);
    expect(report.latency.delay.max).toBeGreaterThanOrEqual(1_000);
  });

  it("--stream sends the OpenAI request streamed, timing each first token; the jobs are the platform's", async () => {
    const before = await counters(at, "model-server");
    const run = await flashRun(
      [
        "bench",
        "--api-url",
        at,
        "--api-key",
        KEY,
        "--stream",
        "--concurrency",
        "2",
        "--requests",
        "8",
        "--json",
      ],
      {},
      join(ROOT, "examples/model-server"),
    );
    const after = await counters(at, "model-server");
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.requests).toEqual({ sent: 8, completed: 8, failed: 0 });
    expect((after.jobs.COMPLETED ?? 0) - (before.jobs.COMPLETED ?? 0)).toBe(8);
    // Every request's first token, never after its end; no job timings in a stream, so the platform's sum is used.
    expect(report.latency.firstToken.count).toBe(8);
    expect(report.latency.firstToken.max).toBeLessThanOrEqual(report.latency.total.max);
    expect(report.latency.execution).toBeNull();
    within2(report.cost.executionSeconds, after.execution - before.execution);
    expect(report.coldStarts).toBeNull();
  });

  it("--stream refuses an input that is not a model server's OpenAI request", async () => {
    const run = await flashRun([
      "bench",
      "model-server",
      "--api-url",
      at,
      "--api-key",
      KEY,
      "--stream",
      "--input",
      "examples/echo/test_input.json",
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      '✗ --stream sends a model server\'s OpenAI request: examples/echo/test_input.json needs {"input": {"openai_route": "/v1/chat/completions", "openai_input": {...}}}',
    );
  });
});

describe("flash bench on a load-balanced endpoint", { timeout: 120_000 }, () => {
  let lb: Flash;
  let at: string;

  beforeAll(async () => {
    const port = await freePort();
    at = `http://127.0.0.1:${port}`;
    lb = flash(["dev", "test/fixtures/lb-routes.ts", "--port", String(port), "--api-key", KEY]);
    await lb.waitForLine(/^Ready\. Try: curl/, 60_000);
  }, 90_000);

  afterAll(async () => {
    lb?.child.kill("SIGINT");
    await lb?.exited;
  });

  /** The platform's answers of routes-api by status code. */
  async function answers(): Promise<Record<string, number>> {
    const text = await (await fetch(`${at}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text();
    const out: Record<string, number> = {};
    for (const m of text.matchAll(/^flash_lb_requests_total\{endpoint="routes-api",code="(\d+)"\} (\S+)$/gm))
      out[m[1]!] = Number(m[2]);
    return out;
  }

  async function routeBench(request: unknown) {
    const file = join(dir, `request-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(request));
    const run = await flashRun([
      "bench",
      "routes-api",
      "--input",
      file,
      "--api-url",
      at,
      "--api-key",
      KEY,
      "--concurrency",
      "2",
      "--requests",
      "10",
      "--settle",
      "1s",
      "--json",
    ]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout);
  }

  it("sends the test input's route request, and its answers are the platform's", async () => {
    const before = await answers();
    const report = await routeBench({ method: "GET", path: "/hello/ann" });
    const after = await answers();
    expect(report.endpoint.url).toBe(`${at}/lb/routes-api`);
    expect(report.requests).toEqual({ sent: 10, completed: 10, failed: 0 });
    expect((after["200"] ?? 0) - (before["200"] ?? 0)).toBe(10);
    // A route answer names no worker and carries no job timings.
    expect(report.latency.delay).toBeNull();
    expect(report.coldStarts).toBeNull();
    expect(report.workers.source).toBe("sampled");
    expect(report.workers.max).toBe(1);
  });

  it("counts each answer that is not 2xx by its status", async () => {
    const before = await answers();
    const report = await routeBench({ requests: [{ method: "GET", path: "/nowhere" }] });
    const after = await answers();
    expect(report.requests).toEqual({ sent: 10, completed: 0, failed: 10 });
    expect(report.failures.map((f: { kind: string; count: number }) => [f.kind, f.count])).toEqual([
      ["HTTP 404", 10],
    ]);
    expect((after["404"] ?? 0) - (before["404"] ?? 0)).toBe(10);
  });

  it("refuses a job for a load-balanced endpoint, saying what it needs", async () => {
    const run = await flashRun([
      "bench",
      "routes-api",
      "--api-url",
      at,
      "--api-key",
      KEY,
      "--input",
      "examples/echo/test_input.json",
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      '✗ routes-api is load-balanced: examples/echo/test_input.json must be a request, {"method", "path", "body"} (or {"requests": [...]}, the first one sent)',
    );
  });
});
