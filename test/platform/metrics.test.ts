// The local platform's /metrics after real jobs on real workers (flash dev), read by a Prometheus text parser.
import parsePrometheusTextFormat, { type PromFamily } from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Flash, flash, freePort } from "../process.js";

let dev: Flash;
let base: string;
let launched: number;
const KEY = "metrics-key";
const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };

beforeAll(async () => {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  launched = Date.now();
  dev = flash(
    [
      "dev",
      "examples/echo/handler.ts",
      "test/fixtures/lb-routes.ts",
      "--port",
      String(port),
      "--api-key",
      KEY,
      "--workers",
      "1,1",
    ],
    {},
  );
  await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
}, 90_000);

afterAll(async () => {
  dev?.child.kill("SIGINT");
  await dev?.exited;
});

async function scrape(): Promise<{ text: string; families: Map<string, PromFamily> }> {
  const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const text = await response.text();
  return { text, families: new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f])) };
}

/** The value of the series whose labels include `labels`, as a number; undefined when there is none. */
function value(
  families: Map<string, PromFamily>,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  const family = families.get(name);
  const sample = family?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
  if (!sample) return undefined;
  return Number(sample.value ?? sample.count);
}

describe("local platform /metrics", () => {
  it("refuses a scrape without the key", async () => {
    const response = await fetch(`${base}/metrics`);
    expect(response.status).toBe(401);
  });

  it("counts jobs by status, times them in histograms, shows queue and workers, and load-balanced codes", async () => {
    const runsync = (input: unknown) =>
      fetch(`${base}/v2/echo/runsync`, { method: "POST", headers, body: JSON.stringify({ input }) }).then(
        (r) => r.json() as Promise<{ status: string }>,
      );
    for (let i = 0; i < 3; i++) expect((await runsync({ i })).status).toBe("COMPLETED");
    expect((await runsync({ mock_error: "bad" })).status).toBe("FAILED");
    expect((await fetch(`${base}/lb/routes-api/hello/ann`, { headers })).status).toBe(200);
    expect((await fetch(`${base}/lb/routes-api/hello/bob`, { headers })).status).toBe(200);
    expect((await fetch(`${base}/lb/routes-api/nowhere`, { headers })).status).toBe(404);

    const { text, families } = await scrape();
    expect(families.get("flash_jobs_total")?.type).toBe("COUNTER");
    expect(value(families, "flash_jobs_submitted_total", { endpoint: "echo" })).toBe(4);
    expect(value(families, "flash_jobs_total", { endpoint: "echo", status: "COMPLETED" })).toBe(3);
    expect(value(families, "flash_jobs_total", { endpoint: "echo", status: "FAILED" })).toBe(1);

    // The parser folds a histogram's series into one set of buckets by `le` (prom2json's shape) and keeps _sum and
    // _count only without labels: each family here has one series, and its +Inf bucket is its count.
    for (const name of ["flash_job_delay_seconds", "flash_job_execution_seconds"]) {
      const histogram = families.get(name);
      expect(histogram?.type).toBe("HISTOGRAM");
      expect(histogram?.metrics).toHaveLength(1);
      expect(Number(histogram?.metrics[0]?.buckets?.["+Inf"])).toBe(4);
      expect(Number(histogram?.metrics[0]?.buckets?.["300"])).toBe(4);
      expect(text).toContain(`${name}_count{endpoint="echo"} 4\n`);
      expect(text).toMatch(new RegExp(`${name}_sum\\{endpoint="echo"\\} \\d`));
    }

    expect(families.get("flash_queue_depth")?.type).toBe("GAUGE");
    expect(value(families, "flash_queue_depth", { endpoint: "echo" })).toBe(0);
    expect(value(families, "flash_jobs_in_progress", { endpoint: "echo" })).toBe(0);
    // One worker each (--workers 1,1): the echo worker waits for work, the load-balanced one is ready.
    expect(value(families, "flash_workers", { endpoint: "echo", state: "idle" })).toBe(1);
    expect(value(families, "flash_workers", { endpoint: "routes-api", state: "ready" })).toBe(1);

    // Worker-seconds, start to exit, of the one echo worker: more than none, less than the platform has been up.
    expect(families.get("flash_worker_seconds_total")?.type).toBe("COUNTER");
    expect(value(families, "flash_worker_starts_total", { endpoint: "echo" })).toBe(1);
    const workerSeconds = value(families, "flash_worker_seconds_total", { endpoint: "echo" }) ?? 0;
    expect(workerSeconds).toBeGreaterThan(0);
    expect(workerSeconds).toBeLessThan((Date.now() - launched) / 1000);

    expect(value(families, "flash_lb_requests_total", { endpoint: "routes-api", code: "200" })).toBe(2);
    expect(value(families, "flash_lb_requests_total", { endpoint: "routes-api", code: "404" })).toBe(1);
    const lbSeconds = families.get("flash_lb_request_duration_seconds")?.metrics;
    expect(lbSeconds).toHaveLength(1);
    expect(Number(lbSeconds?.[0]?.buckets?.["+Inf"])).toBe(3);
    expect(text).toContain('flash_lb_request_duration_seconds_count{endpoint="routes-api"} 3\n');
  });
});
