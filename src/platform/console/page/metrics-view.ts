// Per-endpoint metrics: requests per bucket, and p50/p95 delay and execution times over the last minutes; for a
// load-balanced endpoint, its answers by status code, their latency and the newest requests.

import type { ConsoleEndpoint, LbRequest, MetricsBucket } from "../wire.js";
import { clear, h } from "./dom.js";
import { clock, ms } from "./format.js";
import { onFrame } from "./frame.js";
import { plot } from "./plot.js";
import type { Store } from "./store.js";

/** Plots span at least this much time, so a fresh platform does not show one fat bucket. */
const MIN_SPAN_MS = 5 * 60_000;
/** Newest requests listed under a load-balanced endpoint's plots. */
const REQUESTS_SHOWN = 20;

export class MetricsView {
  readonly schedule = onFrame(() => this.render());
  visible = false;

  constructor(
    private readonly root: HTMLElement,
    private readonly store: Store,
  ) {
    store.on("metrics", () => this.visible && this.schedule());
    store.on("endpoints", () => this.visible && this.schedule());
    store.on("requests", () => this.visible && this.schedule());
    // The time axis slides even when nothing happens.
    window.setInterval(() => this.visible && this.schedule(), 10_000);
  }

  render(): void {
    clear(this.root);
    const { bucketMs, windowMs, series } = this.store.metrics;
    const endpoints = this.store.endpoints.filter((e) => e.kind === "queue");
    this.root.append(
      h(
        "p",
        { class: "muted" },
        `Buckets of ${ms(bucketMs)} over the last ${ms(windowMs)}; times are of jobs that finished in the bucket, ` +
          "latencies of requests answered in it.",
      ),
    );
    if (this.store.endpoints.length === 0) this.root.append(h("p", { class: "muted" }, "No endpoints yet."));
    const now = Date.now();
    for (const endpoint of this.store.endpoints.filter((e) => e.kind === "load-balanced")) {
      this.root.append(this.loadBalanced(endpoint, now));
    }
    for (const endpoint of endpoints) {
      const buckets = series[endpoint.id] ?? [];
      const filled = fill(buckets, bucketMs, windowMs, now);
      const times = filled.map((b) => b.t);
      const total = buckets.reduce((sum, b) => sum + b.requests, 0);
      const done = buckets.reduce((sum, b) => sum + b.completed, 0);
      const failed = buckets.reduce((sum, b) => sum + b.failed, 0);
      const pick = (key: keyof MetricsBucket) => filled.map((b) => b[key] as number | null);
      this.root.append(
        h(
          "section",
          { class: "metrics card", "data-endpoint-id": endpoint.id },
          h(
            "header",
            {},
            h("strong", {}, endpoint.id),
            h(
              "span",
              { class: "muted" },
              ` ${total} ${total === 1 ? "request" : "requests"} · ${done} completed · ${failed} failed in the window`,
            ),
          ),
          h(
            "div",
            { class: "plots" },
            plot({
              title: "Requests",
              times,
              bucketMs,
              kind: "bars",
              unit: "count",
              series: [{ label: "requests", className: "s-requests", values: pick("requests") }],
            }),
            plot({
              title: "Delay time",
              times,
              bucketMs,
              kind: "lines",
              unit: "ms",
              series: [
                { label: "p50", className: "s-p50", values: pick("delayP50") },
                { label: "p95", className: "s-p95", values: pick("delayP95") },
              ],
            }),
            plot({
              title: "Execution time",
              times,
              bucketMs,
              kind: "lines",
              unit: "ms",
              series: [
                { label: "p50", className: "s-p50", values: pick("executionP50") },
                { label: "p95", className: "s-p95", values: pick("executionP95") },
              ],
            }),
          ),
        ),
      );
    }
  }

  /** Requests and their latency by bucket, answers by status code, and the newest requests. */
  private loadBalanced(endpoint: ConsoleEndpoint, now: number): HTMLElement {
    const { bucketMs, windowMs, series } = this.store.metrics;
    const buckets = series[endpoint.id] ?? [];
    const filled = fill(buckets, bucketMs, windowMs, now);
    const times = filled.map((b) => b.t);
    const total = buckets.reduce((sum, b) => sum + b.requests, 0);
    const codes = new Map<string, number>();
    for (const bucket of buckets) {
      for (const [code, n] of Object.entries(bucket.statusCodes ?? {}))
        codes.set(code, (codes.get(code) ?? 0) + n);
    }
    const byCode = [...codes].sort(([a], [b]) => a.localeCompare(b));
    const pick = (key: "requests" | "executionP50" | "executionP95") => filled.map((b) => b[key]);
    const recent = (this.store.requests[endpoint.id] ?? []).slice(-REQUESTS_SHOWN).reverse();
    return h(
      "section",
      { class: "metrics card", "data-endpoint-id": endpoint.id },
      h(
        "header",
        {},
        h("strong", {}, endpoint.id),
        h("span", { class: "tag" }, "load-balanced"),
        h(
          "span",
          { class: "muted status-codes" },
          ` ${total} ${total === 1 ? "request" : "requests"} in the window`,
          ...byCode.map(([code, n]) => ` · ${code} ×${n}`),
        ),
      ),
      h(
        "div",
        { class: "plots" },
        plot({
          title: "Requests",
          times,
          bucketMs,
          kind: "bars",
          unit: "count",
          series: [{ label: "requests", className: "s-requests", values: pick("requests") }],
        }),
        plot({
          title: "Latency",
          times,
          bucketMs,
          kind: "lines",
          unit: "ms",
          series: [
            { label: "p50", className: "s-p50", values: pick("executionP50") },
            { label: "p95", className: "s-p95", values: pick("executionP95") },
          ],
        }),
      ),
      recent.length === 0
        ? h("p", { class: "muted small" }, "No requests yet.")
        : h(
            "table",
            { class: "lb-requests" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", {}, "at"),
                h("th", {}, "request"),
                h("th", {}, "status"),
                h("th", {}, "time"),
              ),
            ),
            h("tbody", {}, ...recent.map(requestRow)),
          ),
    );
  }
}

function requestRow(request: LbRequest): HTMLElement {
  return h(
    "tr",
    {},
    h("td", { class: "muted" }, clock(request.at)),
    h("td", { class: "mono" }, `${request.method} ${request.path}`),
    h(
      "td",
      {},
      h("span", { class: `status ${request.status < 400 ? "ok" : "bad"}` }, String(request.status)),
    ),
    h("td", {}, ms(request.ms)),
  );
}

/** Every bucket from the start of the span to now, empty ones as zero requests and no times. */
function fill(buckets: MetricsBucket[], bucketMs: number, windowMs: number, now: number): MetricsBucket[] {
  const last = now - (now % bucketMs);
  const firstSeen = buckets[0]?.t ?? last;
  const start = Math.max(last - windowMs + bucketMs, Math.min(firstSeen, last - MIN_SPAN_MS));
  const byTime = new Map(buckets.map((b) => [b.t, b]));
  const out: MetricsBucket[] = [];
  for (let t = start - (start % bucketMs); t <= last; t += bucketMs) {
    out.push(
      byTime.get(t) ?? {
        t,
        requests: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        delayP50: null,
        delayP95: null,
        executionP50: null,
        executionP95: null,
      },
    );
  }
  return out;
}
