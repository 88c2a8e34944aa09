// The load-balanced worker's GET /metrics over real HTTP, read by a Prometheus text parser; a user route wins.
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterEach, describe, expect, it } from "vitest";
import { Endpoint } from "../../src/index.js";
import { createLogger } from "../../src/log/index.js";
import { claimsPath } from "../../src/runtime/lb/metrics.js";
import { RouteServer } from "../../src/runtime/lb/server.js";

const servers: RouteServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(0)));
});

async function listen(api: Endpoint): Promise<string> {
  const server = new RouteServer(api, { log: createLogger({ level: "SILENT", json: false }) });
  servers.push(server);
  expect(await server.start()).toBe(true);
  await server.app.listen({ host: "127.0.0.1", port: 0 });
  const address = server.app.server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

describe("load-balanced worker /metrics", () => {
  it("counts requests by method, route and code, times them, and shows the calls in flight", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered = () => {};
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const api = new Endpoint({ name: "metrics-api" });
    api.get("/hello/:name", ({ name }: { name: string }) => ({ hello: name }));
    api.post("/fail", () => {
      throw new Error("no");
    });
    api.get("/hold", async () => {
      entered();
      await held;
      return "done";
    });
    const url = await listen(api);
    expect((await fetch(`${url}/hello/a`)).status).toBe(200);
    expect((await fetch(`${url}/hello/b`)).status).toBe(200);
    expect((await fetch(`${url}/fail`, { method: "POST" })).status).toBe(500);
    expect((await fetch(`${url}/nowhere`)).status).toBe(404);
    const holding = fetch(`${url}/hold`);
    await inside;

    const response = await fetch(`${url}/metrics`);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const text = await response.text();
    const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    const requests = families.get("flash_worker_requests_total");
    expect(requests?.type).toBe("COUNTER");
    const count = (labels: Record<string, string>) =>
      Number(
        requests?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value,
      );
    expect(count({ method: "GET", route: "/hello/:name", code: "200" })).toBe(2);
    expect(count({ method: "POST", route: "/fail", code: "500" })).toBe(1);
    expect(count({ method: "GET", route: "unmatched", code: "404" })).toBe(1);
    expect(families.get("flash_worker_requests_in_flight")?.metrics).toStrictEqual([{ value: "1" }]);
    // The parser folds a histogram's labelled series into one set of buckets (prom2json's shape): read the counts.
    expect(families.get("flash_worker_request_duration_seconds")?.type).toBe("HISTOGRAM");
    expect(text).toContain(
      'flash_worker_request_duration_seconds_count{method="GET",route="/hello/:name"} 2\n',
    );
    expect(text).toContain(
      'flash_worker_request_duration_seconds_bucket{method="POST",route="/fail",le="+Inf"} 1\n',
    );

    release();
    expect(await (await holding).json()).toBe("done");
  });

  it("a user route on /metrics (or a parameter that matches it) is served instead", async () => {
    const own = new Endpoint({ name: "own" });
    own.get("/metrics", () => ({ mine: true }));
    expect(await (await fetch(`${await listen(own)}/metrics`)).json()).toStrictEqual({ mine: true });
    const param = new Endpoint({ name: "param" });
    param.get("/:page", ({ page }: { page: string }) => ({ page }));
    expect(await (await fetch(`${await listen(param)}/metrics`)).json()).toStrictEqual({ page: "metrics" });
  });

  it("claimsPath: literal, parameter and wildcard segments", () => {
    expect(claimsPath("/metrics", "/metrics")).toBe(true);
    expect(claimsPath("/:any", "/metrics")).toBe(true);
    expect(claimsPath("/*", "/metrics")).toBe(true);
    expect(claimsPath("/metrics/:x", "/metrics")).toBe(false);
    expect(claimsPath("/metric", "/metrics")).toBe(false);
    expect(claimsPath("/a/:b", "/metrics")).toBe(false);
  });
});
