// Per-endpoint request counts and p50/p95 delay and execution times in fixed time buckets over a window; for a
// load-balanced endpoint, its answers by status code and their latency (as execution time).
import { Histogram } from "../../http/prometheus.js";
import type { JobRecord } from "../state/jobs.js";
import type { ConsoleMetrics, MetricsBucket } from "./wire.js";

export const METRICS_DEFAULTS = { bucketMs: 10_000, windowMs: 30 * 60_000 };
/** Samples kept per bucket: past this, reservoir sampling keeps percentiles honest in bounded memory. */
const MAX_SAMPLES = 1_000;

interface Bucket {
  t: number;
  requests: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Jobs timed in this bucket, of which `delays`/`executions` hold a uniform sample. */
  timed: number;
  delays: number[];
  executions: number[];
  statusCodes?: Record<string, number>;
}

/** Counts since the platform started, per endpoint: what /metrics exposes (console/prometheus.ts). */
export interface EndpointTotals {
  submitted: number;
  /** Terminal jobs by status: COMPLETED, FAILED, CANCELLED, TIMED_OUT. */
  finished: Map<string, number>;
  /** Seconds queued → taken and taken → done, of jobs a worker took. */
  delay: Histogram;
  execution: Histogram;
  /** A load-balanced endpoint's answers by status code, and their latency in seconds. */
  served: Map<number, number>;
  servedSeconds: Histogram;
}

/** Nearest-rank percentile of unsorted values; null for none. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? null;
}

export class MetricsBook {
  private readonly series = new Map<string, Bucket[]>();
  private readonly sums = new Map<string, EndpointTotals>();
  private readonly changed = new Map<string, Set<Bucket>>();

  constructor(
    readonly bucketMs = METRICS_DEFAULTS.bucketMs,
    readonly windowMs = METRICS_DEFAULTS.windowMs,
    private readonly now: () => number = Date.now,
    private readonly random: () => number = Math.random,
  ) {}

  /** A job was submitted. */
  request(endpointId: string, at: number): void {
    this.bucket(endpointId, at).requests++;
    this.totalsOf(endpointId).submitted++;
  }

  /** A job reached a terminal state; its times count when a worker took it. */
  finished(job: JobRecord): void {
    const bucket = this.bucket(job.endpointId, job.finishedAt ?? this.now());
    if (job.status === "COMPLETED") bucket.completed++;
    else if (job.status === "CANCELLED") bucket.cancelled++;
    else bucket.failed++;
    const totals = this.totalsOf(job.endpointId);
    totals.finished.set(job.status, (totals.finished.get(job.status) ?? 0) + 1);
    if (job.takenAt === undefined || job.delayTime === undefined || job.executionTime === undefined) return;
    this.sample(bucket, job.delayTime, job.executionTime);
    totals.delay.observe(job.delayTime / 1000);
    totals.execution.observe(job.executionTime / 1000);
  }

  /** A load-balanced endpoint answered a request: counted by status (under 400 completed, else failed), timed. */
  served(endpointId: string, at: number, status: number, ms: number): void {
    const bucket = this.bucket(endpointId, at);
    bucket.requests++;
    if (status < 400) bucket.completed++;
    else bucket.failed++;
    bucket.statusCodes ??= {};
    bucket.statusCodes[status] = (bucket.statusCodes[status] ?? 0) + 1;
    this.sample(bucket, undefined, ms);
    const totals = this.totalsOf(endpointId);
    totals.served.set(status, (totals.served.get(status) ?? 0) + 1);
    totals.servedSeconds.observe(ms / 1000);
  }

  /** Every endpoint's counts since the platform started (never trimmed: Prometheus counters only grow). */
  totals(): ReadonlyMap<string, EndpointTotals> {
    return this.sums;
  }

  private totalsOf(endpointId: string): EndpointTotals {
    let totals = this.sums.get(endpointId);
    if (!totals) {
      totals = {
        submitted: 0,
        finished: new Map(),
        delay: new Histogram(),
        execution: new Histogram(),
        served: new Map(),
        servedSeconds: new Histogram(),
      };
      this.sums.set(endpointId, totals);
    }
    return totals;
  }

  private sample(bucket: Bucket, delay: number | undefined, execution: number): void {
    bucket.timed++;
    if (bucket.executions.length < MAX_SAMPLES) {
      if (delay !== undefined) bucket.delays.push(delay);
      bucket.executions.push(execution);
      return;
    }
    const slot = Math.floor(this.random() * bucket.timed);
    if (slot < MAX_SAMPLES) {
      if (delay !== undefined) bucket.delays[slot] = delay;
      bucket.executions[slot] = execution;
    }
  }

  /** Every endpoint's buckets within the window, oldest first. */
  snapshot(): ConsoleMetrics {
    const series: Record<string, MetricsBucket[]> = {};
    for (const [endpointId, buckets] of this.series) {
      this.trim(buckets);
      if (buckets.length > 0) series[endpointId] = buckets.map(view);
    }
    return { bucketMs: this.bucketMs, windowMs: this.windowMs, series };
  }

  /** Buckets that changed since the last call. */
  takeChanged(): { endpointId: string; bucket: MetricsBucket }[] {
    const out: { endpointId: string; bucket: MetricsBucket }[] = [];
    for (const [endpointId, buckets] of this.changed) {
      for (const bucket of buckets) out.push({ endpointId, bucket: view(bucket) });
    }
    this.changed.clear();
    return out;
  }

  private bucket(endpointId: string, at: number): Bucket {
    const t = at - (at % this.bucketMs);
    let buckets = this.series.get(endpointId);
    if (!buckets) {
      buckets = [];
      this.series.set(endpointId, buckets);
    }
    // Events arrive in time order, so the bucket is nearly always the last one; a late one searches back.
    let bucket: Bucket | undefined;
    for (let i = buckets.length - 1; i >= 0 && i >= buckets.length - 3; i--) {
      const candidate = buckets[i];
      if (candidate?.t === t) bucket = candidate;
    }
    if (!bucket) {
      bucket = {
        t,
        requests: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        timed: 0,
        delays: [],
        executions: [],
      };
      const at = buckets.findIndex((b) => b.t > t);
      if (at === -1) buckets.push(bucket);
      else buckets.splice(at, 0, bucket);
      this.trim(buckets);
    }
    let changed = this.changed.get(endpointId);
    if (!changed) {
      changed = new Set();
      this.changed.set(endpointId, changed);
    }
    changed.add(bucket);
    return bucket;
  }

  private trim(buckets: Bucket[]): void {
    const oldest = this.now() - this.windowMs;
    let drop = 0;
    while (drop < buckets.length && (buckets[drop]?.t ?? 0) + this.bucketMs <= oldest) drop++;
    if (drop > 0) buckets.splice(0, drop);
  }
}

function view(bucket: Bucket): MetricsBucket {
  return {
    t: bucket.t,
    requests: bucket.requests,
    completed: bucket.completed,
    failed: bucket.failed,
    cancelled: bucket.cancelled,
    delayP50: percentile(bucket.delays, 50),
    delayP95: percentile(bucket.delays, 95),
    executionP50: percentile(bucket.executions, 50),
    executionP95: percentile(bucket.executions, 95),
    ...(bucket.statusCodes ? { statusCodes: { ...bucket.statusCodes } } : {}),
  };
}
