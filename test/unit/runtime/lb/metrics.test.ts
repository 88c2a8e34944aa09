// The load-balanced worker's /metrics counters, as RouteMetrics keeps and writes them.
import { describe, expect, it } from "vitest";
import { RouteMetrics } from "../../../../src/runtime/lb/metrics.js";

describe("RouteMetrics", () => {
  it("counts answers by method, route and code, durations by method and route; unmatched requests named so", () => {
    const metrics = new RouteMetrics();
    metrics.observe("POST", "/echo", 200, 0.002);
    metrics.observe("POST", "/echo", 200, 0.2);
    metrics.observe("POST", "/echo", 500, 0.02);
    metrics.observe("GET", "/echo", 200, 0.002);
    metrics.observe("GET", "", 404, 0.001);
    const text = metrics.text(3);
    const lines = text.split("\n");
    expect(lines).toContain('flash_worker_requests_total{method="POST",route="/echo",code="200"} 2');
    expect(lines).toContain('flash_worker_requests_total{method="POST",route="/echo",code="500"} 1');
    expect(lines).toContain('flash_worker_requests_total{method="GET",route="/echo",code="200"} 1');
    expect(lines).toContain('flash_worker_requests_total{method="GET",route="unmatched",code="404"} 1');
    expect(lines).toContain(
      'flash_worker_request_duration_seconds_bucket{method="POST",route="/echo",le="0.005"} 1',
    );
    expect(lines).toContain(
      'flash_worker_request_duration_seconds_bucket{method="POST",route="/echo",le="0.025"} 2',
    );
    expect(lines).toContain(
      'flash_worker_request_duration_seconds_bucket{method="POST",route="/echo",le="0.25"} 3',
    );
    expect(lines).toContain(
      'flash_worker_request_duration_seconds_bucket{method="POST",route="/echo",le="+Inf"} 3',
    );
    expect(lines).toContain('flash_worker_request_duration_seconds_count{method="GET",route="unmatched"} 1');
    expect(lines).toContain("flash_worker_requests_in_flight 3");
  });
});
