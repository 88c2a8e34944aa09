// The platform's /metrics: the console's own numbers (MetricsBook totals, the endpoint cards) in Prometheus text.
import { type Labels, type MetricFamily, prometheusText } from "../../http/prometheus.js";
import type { EndpointTotals } from "./metrics.js";
import type { ConsoleEndpoint } from "./wire.js";

/** Workers by state per endpoint: the console's states for queue endpoints, the proxy's for load-balanced ones. */
export type WorkerStates = ReadonlyMap<string, ReadonlyMap<string, number>>;

const counts = <K>(byEndpoint: Iterable<[string, ReadonlyMap<K, number>]>, label: string) =>
  [...byEndpoint].flatMap(([endpoint, map]) =>
    [...map].map(([key, value]) => ({ labels: { endpoint, [label]: String(key) } as Labels, value })),
  );

/** A queue endpoint's worker processes since the platform started: their exact seconds (start to exit) and starts. */
export interface WorkerUse {
  seconds: number;
  starts: number;
}

/** The exposition for every endpoint the console shows. */
export function platformMetrics(
  totals: ReadonlyMap<string, EndpointTotals>,
  endpoints: readonly ConsoleEndpoint[],
  workers: WorkerStates,
  use: ReadonlyMap<string, WorkerUse> = new Map(),
): string {
  const all = [...totals];
  const queue = endpoints.filter((e) => e.kind === "queue");
  const families: MetricFamily[] = [
    {
      name: "flash_jobs_submitted_total",
      help: "Jobs submitted to a queue endpoint.",
      type: "counter",
      samples: all.map(([endpoint, t]) => ({ labels: { endpoint }, value: t.submitted })),
    },
    {
      name: "flash_jobs_total",
      help: "Jobs that reached a final status (COMPLETED, FAILED, CANCELLED, TIMED_OUT).",
      type: "counter",
      samples: counts(
        all.map(([endpoint, t]) => [endpoint, t.finished]),
        "status",
      ),
    },
    {
      name: "flash_job_delay_seconds",
      help: "Time a job waited in the queue before a worker took it.",
      type: "histogram",
      histograms: all
        .filter(([, t]) => t.delay.count > 0)
        .map(([endpoint, t]) => ({
          labels: { endpoint },
          histogram: t.delay,
        })),
    },
    {
      name: "flash_job_execution_seconds",
      help: "Time from a worker taking a job to its result.",
      type: "histogram",
      histograms: all
        .filter(([, t]) => t.execution.count > 0)
        .map(([endpoint, t]) => ({
          labels: { endpoint },
          histogram: t.execution,
        })),
    },
    {
      name: "flash_queue_depth",
      help: "Jobs waiting in the queue.",
      type: "gauge",
      samples: queue.map((e) => ({ labels: { endpoint: e.id }, value: e.inQueue })),
    },
    {
      name: "flash_jobs_in_progress",
      help: "Jobs taken by a worker and not finished.",
      type: "gauge",
      samples: queue.map((e) => ({ labels: { endpoint: e.id }, value: e.inProgress })),
    },
    {
      name: "flash_workers",
      help: "Worker processes by state.",
      type: "gauge",
      samples: counts(workers, "state"),
    },
    {
      name: "flash_worker_seconds_total",
      help: "Seconds the platform's worker processes ran, start to exit (what per-second billing counts).",
      type: "counter",
      samples: [...use].map(([endpoint, u]) => ({ labels: { endpoint }, value: u.seconds })),
    },
    {
      name: "flash_worker_starts_total",
      help: "Worker processes the platform started.",
      type: "counter",
      samples: [...use].map(([endpoint, u]) => ({ labels: { endpoint }, value: u.starts })),
    },
    {
      name: "flash_lb_requests_total",
      help: "Requests a load-balanced endpoint answered, by HTTP status code.",
      type: "counter",
      samples: counts(
        all.map(([endpoint, t]) => [endpoint, t.served]),
        "code",
      ),
    },
    {
      name: "flash_lb_request_duration_seconds",
      help: "Time a load-balanced endpoint took to answer.",
      type: "histogram",
      histograms: all
        .filter(([, t]) => t.servedSeconds.count > 0)
        .map(([endpoint, t]) => ({
          labels: { endpoint },
          histogram: t.servedSeconds,
        })),
    },
  ];
  return prometheusText(families);
}
