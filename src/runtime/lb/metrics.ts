// The load-balanced worker's own counters on GET /metrics (Prometheus text): requests by route and status code,
// their duration, and the requests in flight. Not served when a user route claims the path.
import { Histogram, type Labels, prometheusText } from "../../http/prometheus.js";

export const METRICS_PATH = "/metrics";

/** Whether a route path (fastify syntax: `:param`, `*`) matches the literal `path`, so the user's route wins. */
export function claimsPath(routePath: string, path: string): boolean {
  const want = path.split("/");
  const have = routePath.split("/");
  for (let i = 0; i < have.length; i++) {
    const segment = have[i] ?? "";
    if (segment === "*") return true;
    if (i >= want.length) return false;
    if (segment.startsWith(":")) continue;
    if (segment !== want[i]) return false;
  }
  return have.length === want.length;
}

export class RouteMetrics {
  private readonly requests = new Map<string, { labels: Labels; value: number }>();
  private readonly durations = new Map<string, { labels: Labels; histogram: Histogram }>();

  /** One answered request; `route` is the matched route's path, "" when none matched. */
  observe(method: string, route: string, code: number, seconds: number): void {
    const routeLabel = route === "" ? "unmatched" : route;
    const key = `${method} ${routeLabel}`;
    const counted = `${key} ${code}`;
    const requests = this.requests.get(counted);
    if (requests) requests.value++;
    else this.requests.set(counted, { labels: { method, route: routeLabel, code: String(code) }, value: 1 });
    let duration = this.durations.get(key);
    if (!duration) {
      duration = { labels: { method, route: routeLabel }, histogram: new Histogram() };
      this.durations.set(key, duration);
    }
    duration.histogram.observe(seconds);
  }

  text(inFlight: number): string {
    return prometheusText([
      {
        name: "flash_worker_requests_total",
        help: "Requests this worker answered, by method, route and HTTP status code.",
        type: "counter",
        samples: [...this.requests.values()],
      },
      {
        name: "flash_worker_request_duration_seconds",
        help: "Time this worker took to answer, by method and route.",
        type: "histogram",
        histograms: [...this.durations.values()],
      },
      {
        name: "flash_worker_requests_in_flight",
        help: "Route calls running now.",
        type: "gauge",
        samples: [{ labels: {}, value: inFlight }],
      },
    ]);
  }
}
