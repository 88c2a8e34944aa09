// What the page knows: the snapshot it got on connecting, with deltas applied; capped so a busy platform
// never grows the page without bound.
import type {
  ConsoleEndpoint,
  ConsoleJob,
  ConsoleMetrics,
  ConsoleSettings,
  ConsoleSnapshot,
  JobsDelta,
  LbRequest,
  MetricsBucket,
  MetricsDelta,
  RequestsDelta,
} from "../wire.js";

export type Topic = "jobs" | "endpoints" | "metrics" | "settings" | "requests";

/** Requests kept per load-balanced endpoint (the server's ring holds as many). */
const REQUESTS_KEPT = 200;

export const DEFAULT_JOB_CAP = 1_000;

export class Store {
  jobs = new Map<string, ConsoleJob>();
  endpoints: ConsoleEndpoint[] = [];
  metrics: ConsoleMetrics = { bucketMs: 10_000, windowMs: 30 * 60_000, series: {} };
  settings: ConsoleSettings | undefined;
  /** Each load-balanced endpoint's newest requests, oldest first. */
  requests: Record<string, LbRequest[]> = {};
  totalJobs = 0;
  /** Updates the server left out under load since the page connected. */
  skipped = 0;
  private readonly listeners = new Map<Topic, Set<() => void>>();

  constructor(public jobCap = DEFAULT_JOB_CAP) {}

  on(topic: Topic, listener: () => void): void {
    let set = this.listeners.get(topic);
    if (!set) {
      set = new Set();
      this.listeners.set(topic, set);
    }
    set.add(listener);
  }

  applySnapshot(snapshot: ConsoleSnapshot): void {
    this.jobs = new Map(snapshot.jobs.map((job) => [job.id, job]));
    this.trim();
    this.endpoints = snapshot.endpoints;
    this.metrics = snapshot.metrics;
    this.settings = snapshot.settings;
    this.requests = snapshot.requests;
    this.totalJobs = snapshot.totalJobs;
    this.skipped = 0;
    for (const topic of ["jobs", "endpoints", "metrics", "settings", "requests"] as const) this.emit(topic);
  }

  applyJobs(delta: JobsDelta): void {
    for (const job of delta.jobs) this.jobs.set(job.id, job);
    for (const id of delta.removed) this.jobs.delete(id);
    this.totalJobs = delta.totalJobs;
    this.skipped += delta.skipped;
    this.trim();
    this.emit("jobs");
  }

  /** A job the page itself just submitted: shown before its first delta arrives. */
  upsertJob(job: ConsoleJob): void {
    const known = this.jobs.get(job.id);
    if (known && known.status !== "IN_QUEUE") return;
    this.jobs.set(job.id, { ...known, ...job });
    this.emit("jobs");
  }

  applyEndpoints(endpoints: ConsoleEndpoint[]): void {
    this.endpoints = endpoints;
    this.emit("endpoints");
  }

  applyMetrics(delta: MetricsDelta): void {
    for (const { endpointId, bucket } of delta.buckets) {
      const series = this.metrics.series[endpointId] ?? [];
      this.metrics.series[endpointId] = series;
      const at = series.findIndex((b) => b.t >= bucket.t);
      if (at === -1) series.push(bucket);
      else if (series[at]?.t === bucket.t) series[at] = bucket;
      else series.splice(at, 0, bucket);
      trimSeries(series, this.metrics.windowMs);
    }
    this.emit("metrics");
  }

  applyRequests(delta: RequestsDelta): void {
    for (const { endpointId, request } of delta.requests) {
      const list = this.requests[endpointId] ?? [];
      this.requests[endpointId] = list;
      list.push(request);
      if (list.length > REQUESTS_KEPT) list.shift();
    }
    this.emit("requests");
  }

  applySettings(settings: ConsoleSettings): void {
    this.settings = settings;
    this.emit("settings");
  }

  setJobCap(cap: number): void {
    this.jobCap = cap;
    this.trim();
    this.emit("jobs");
  }

  /** Newest first. */
  sortedJobs(): ConsoleJob[] {
    return [...this.jobs.values()].sort((a, b) => b.createdAt - a.createdAt);
  }

  private trim(): void {
    if (this.jobs.size <= this.jobCap) return;
    const oldest = [...this.jobs.values()].sort((a, b) => a.createdAt - b.createdAt);
    for (const job of oldest.slice(0, this.jobs.size - this.jobCap)) this.jobs.delete(job.id);
  }

  private emit(topic: Topic): void {
    for (const listener of this.listeners.get(topic) ?? []) listener();
  }
}

function trimSeries(series: MetricsBucket[], windowMs: number): void {
  const oldest = Date.now() - windowMs;
  while (series.length > 0 && (series[0]?.t ?? 0) < oldest) series.shift();
}
