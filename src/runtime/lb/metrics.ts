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

/** One method and route's counters: answers by status code and their durations. */
interface RouteSeries {
  readonly labels: Labels;
  readonly byCode: Map<number, { labels: Labels; value: number }>;
  readonly histogram: Histogram;
}

export class RouteMetrics {
  // Keyed by route, then method: a request finds its series without building a key string (it runs per request).
  private readonly series = new Map<string, Map<string, RouteSeries>>();

  /** One answered request; `route` is the matched route's path, "" when none matched. */
  observe(method: string, route: string, code: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.series.set(route, byMethod);
    }
    let series = byMethod.get(method);
    if (!series) {
      const labels = { method, route: route === "" ? "unmatched" : route };
      series = { labels, byCode: new Map(), histogram: new Histogram() };
      byMethod.set(method, series);
    }
    const counted = series.byCode.get(code);
    if (counted) counted.value++;
    else series.byCode.set(code, { labels: { ...series.labels, code: String(code) }, value: 1 });
    series.histogram.observe(seconds);
  }

  text(inFlight: number): string {
    return prometheusText([
      {
        name: "flash_worker_requests_total",
        help: "Requests this worker answered, by method, route and HTTP status code.",
        type: "counter",
        samples: this.all().flatMap((series) => [...series.byCode.values()]),
      },
      {
        name: "flash_worker_request_duration_seconds",
        help: "Time this worker took to answer, by method and route.",
        type: "histogram",
        histograms: this.all().map(({ labels, histogram }) => ({ labels, histogram })),
      },
      {
        name: "flash_worker_requests_in_flight",
        help: "Route calls running now.",
        type: "gauge",
        samples: [{ labels: {}, value: inFlight }],
      },
    ]);
  }

  private all(): RouteSeries[] {
    return [...this.series.values()].flatMap((byMethod) => [...byMethod.values()]);
  }
}
