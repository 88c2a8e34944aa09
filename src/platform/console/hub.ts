// What the console watches: job changes, terminal jobs and log lines from the platform, turned into a snapshot
// for a page that connects and small batched deltas for pages already connected.
import type { FastifyReply } from "fastify";
import { jobErrorMessage } from "../api/openai.js";
import type { EndpointState, WorkerRecord } from "../state/endpoint.js";
import type { JobRecord } from "../state/jobs.js";
import type { Scheduler } from "../state/scheduler.js";
import type { LbEndpoints, LbRequest as ProxyRequest } from "../workers/lb-proxy.js";
import type { WorkerPool } from "../workers/pool.js";
import { type LogBook, workerFilter } from "./logs.js";
import { MetricsBook } from "./metrics.js";
import { platformMetrics, type WorkerUse } from "./prometheus.js";
import { SseStream, sseEvent } from "./sse.js";
import type {
  ConsoleEndpoint,
  ConsoleJob,
  ConsoleJobDetail,
  ConsoleSettings,
  ConsoleSnapshot,
  ConsoleWorker,
  JobsDelta,
  LbRequest,
  LogDelta,
  LogLine,
  MetricsDelta,
  RequestsDelta,
  WorkerState,
} from "./wire.js";

export interface HubSources {
  scheduler: Scheduler;
  pool(endpointId: string): WorkerPool | undefined;
  lb?: LbEndpoints;
  logs: LogBook;
  metrics?: MetricsBook;
  /** This host's GPUs, shown on the workers the platform spawns here. */
  gpu?: string;
  /** How often deltas go out; changes in between are coalesced (default 250 ms). */
  flushMs?: number;
}

/** The newest jobs the console can show; older ones stay in the platform, only out of the console's window. */
export const JOB_WINDOW = 2_000;
/** Jobs per delta event: under a flood of changes the page gets the most recent ones and a skipped count. */
export const MAX_JOBS_PER_EVENT = 500;
/** Log lines per delta event per stream. */
const MAX_LINES_PER_EVENT = 1_000;
/** Log lines sent when a log stream opens. */
export const LOG_BACKLOG = 500;
/** Previews of outputs and errors in the table; the whole value is one GET away. */
const PREVIEW_CHARS = 400;
/** Exited workers remembered per endpoint, so their logs stay one click away. */
const EXITED_KEPT = 20;
/** Load-balanced requests per delta event: under a flood the page gets the newest. */
const MAX_REQUESTS_PER_EVENT = 500;

/** What a finished job adds to its endpoint's card. */
type Held = "completed" | "failed";

interface LogReader {
  stream: SseStream;
  match: (line: LogLine) => boolean;
  pending: LogLine[];
  skipped: number;
}

export function preview(value: unknown): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
}

export function consoleJob(job: JobRecord): ConsoleJob {
  const view: ConsoleJob = {
    id: job.id,
    endpointId: job.endpointId,
    status: job.status,
    createdAt: job.createdAt,
    sync: job.sync,
    retries: job.retries,
    chunks: job.stream.length,
  };
  if (job.finishedAt !== undefined) view.finishedAt = job.finishedAt;
  if (job.delayTime !== undefined) view.delayTime = job.delayTime;
  if (job.executionTime !== undefined) view.executionTime = job.executionTime;
  if (job.workerId !== undefined) view.workerId = job.workerId;
  if (job.hasOutput) view.output = preview(job.output);
  if (job.error !== undefined) view.error = preview(jobErrorMessage(job.error));
  return view;
}

export class ConsoleHub {
  readonly metrics: MetricsBook;
  /** Ids only (a job past its retention must not stay in memory); insertion order is arrival. */
  private readonly window = new Set<string>();
  private readonly dirty = new Map<string, JobRecord>();
  private readonly jobsDone = new Map<string, number>();
  private readonly exited = new Map<string, Map<string, ConsoleWorker>>();
  private readonly lastWorkers = new Map<string, Map<string, ConsoleWorker>>();
  private readonly streams = new Set<SseStream>();
  private readonly logReaders = new Set<LogReader>();
  /** Finished jobs the platform holds, by endpoint: the card counts what the list can show. */
  private readonly held = new Map<string, Record<Held, number>>();
  private readonly heldJobs = new Map<string, Held>();
  private removed: string[] = [];
  private requests: { endpointId: string; request: LbRequest }[] = [];
  private readonly unsubscribe: (() => void)[];
  private timer: NodeJS.Timeout | undefined;
  private lastEndpoints = "";

  constructor(private readonly sources: HubSources) {
    const { scheduler } = sources;
    this.metrics = sources.metrics ?? new MetricsBook();
    this.unsubscribe = [
      scheduler.jobs.onChange((job, added) => this.jobChanged(job, added)),
      scheduler.onTerminal((job) => {
        this.metrics.finished(job);
        if (job.workerId !== undefined)
          this.jobsDone.set(job.workerId, (this.jobsDone.get(job.workerId) ?? 0) + 1);
      }),
      scheduler.jobs.onForget((job) => this.jobForgotten(job)),
      sources.logs.onLine((line) => this.logLine(line)),
      ...(sources.lb ? [sources.lb.onRequest((id, request) => this.lbRequest(id, request))] : []),
    ];
  }

  // ---- views -----------------------------------------------------------------------------------

  snapshot(jobLimit = 1_000): ConsoleSnapshot {
    const jobs: ConsoleJob[] = [];
    const ids = [...this.window];
    for (let i = ids.length - 1; i >= 0 && jobs.length < jobLimit; i--) {
      const id = ids[i] ?? "";
      // JobStore.get forgets a job whose retention ended; the window follows.
      const record = this.sources.scheduler.jobs.get(id);
      if (record) jobs.push(consoleJob(record));
      else this.window.delete(id);
    }
    jobs.sort((a, b) => b.createdAt - a.createdAt);
    return {
      serverTime: Date.now(),
      endpoints: this.endpoints(),
      jobs,
      totalJobs: this.sources.scheduler.jobs.size,
      metrics: this.metrics.snapshot(),
      settings: this.settings(),
      requests: Object.fromEntries((this.sources.lb?.list() ?? []).map((lb) => [lb.id, lb.recentRequests()])),
    };
  }

  /** /metrics: the same numbers in Prometheus text (exited workers are not counted). */
  prometheus(): string {
    const endpoints = this.endpoints();
    const workers = new Map<string, Map<string, number>>();
    const add = (endpointId: string, state: string) => {
      let states = workers.get(endpointId);
      if (!states) {
        states = new Map();
        workers.set(endpointId, states);
      }
      states.set(state, (states.get(state) ?? 0) + 1);
    };
    for (const endpoint of endpoints) {
      if (endpoint.kind !== "queue") continue;
      for (const worker of endpoint.workerList) if (worker.state !== "exited") add(endpoint.id, worker.state);
    }
    for (const lb of this.sources.lb?.list() ?? []) {
      for (const worker of lb.workerList()) add(lb.id, worker.state);
      for (const _dead of lb.dead) add(lb.id, "unhealthy");
    }
    const use = new Map<string, WorkerUse>();
    for (const endpoint of endpoints) {
      const pool = endpoint.kind === "queue" ? this.sources.pool(endpoint.id) : undefined;
      if (pool) use.set(endpoint.id, { seconds: pool.workerSeconds, starts: pool.starts });
    }
    return platformMetrics(this.metrics.totals(), endpoints, workers, use);
  }

  settings(): ConsoleSettings {
    return { retention: this.sources.scheduler.jobs.retentionMs, jobWindow: JOB_WINDOW };
  }

  job(id: string): ConsoleJobDetail | undefined {
    const record = this.sources.scheduler.jobs.get(id);
    if (!record) return undefined;
    const detail: ConsoleJobDetail = {
      ...consoleJob(record),
      input: record.input,
      stream: record.stream.map((chunk) => chunk.output),
      executionTimeoutMs: record.executionTimeoutMs,
    };
    if (record.hasOutput) detail.outputValue = record.output;
    if (record.error !== undefined) detail.errorValue = record.error;
    if (record.webhook !== undefined) detail.webhook = record.webhook;
    return detail;
  }

  endpoints(): ConsoleEndpoint[] {
    const out: ConsoleEndpoint[] = this.sources.scheduler.listEndpoints().map((endpoint) => ({
      id: endpoint.id,
      name: endpoint.config.name,
      kind: "queue",
      path: `/v2/${endpoint.id}`,
      workers: endpoint.config.workers,
      inQueue: endpoint.queue.size,
      inProgress: endpoint.inProgress,
      completed: this.held.get(endpoint.id)?.completed ?? 0,
      failed: this.held.get(endpoint.id)?.failed ?? 0,
      retried: endpoint.counters.retried,
      workerList: this.workers(endpoint),
      workersRunning: this.sources.pool(endpoint.id)?.size ?? endpoint.workers.size,
      workersUnhealthy: 0,
      sample: endpoint.config.sample,
      openaiCompatible: endpoint.config.openaiCompatible,
    }));
    for (const endpoint of out) {
      endpoint.workersUnhealthy = endpoint.workerList.filter((w) => w.state === "unhealthy").length;
    }
    for (const lb of this.sources.lb?.list() ?? []) {
      const info = lb.info("");
      out.push({
        id: info.id,
        name: info.name,
        kind: "load-balanced",
        path: `/lb/${info.id}`,
        workers: info.workers,
        inQueue: 0,
        inProgress: 0,
        completed: 0,
        failed: 0,
        retried: 0,
        workerList: lb.dead.map((dead) => ({
          id: dead.id,
          state: "unhealthy",
          startedAt: dead.startedAt,
          unhealthy: dead.reason,
          jobsDone: 0,
          jobsHeld: 0,
        })),
        workersRunning: info.workersRunning,
        workersReady: info.workersReady,
        workersUnhealthy: lb.dead.length + lb.workerList().filter((w) => w.state === "unhealthy").length,
        sample: info.sample,
      });
    }
    return out;
  }

  /** Spawned processes joined with the workers' own requests; workers seen before and gone now are exited. */
  private workers(endpoint: EndpointState): ConsoleWorker[] {
    const now = new Map<string, ConsoleWorker>();
    for (const process of this.sources.pool(endpoint.id)?.processList ?? []) {
      const record = endpoint.workers.get(process.id);
      const worker = this.worker(process.id, record, process.stopping ? "stopping" : undefined);
      worker.startedAt = process.startedAt;
      if (process.pid !== undefined) worker.pid = process.pid;
      if (this.sources.gpu) worker.gpu = this.sources.gpu;
      if (record?.readyAt !== undefined) worker.coldStartMs = Math.max(0, record.readyAt - process.startedAt);
      now.set(process.id, worker);
    }
    for (const record of endpoint.workers.values()) {
      if (!now.has(record.id)) now.set(record.id, this.worker(record.id, record));
    }
    let exited = this.exited.get(endpoint.id);
    if (!exited) {
      exited = new Map();
      this.exited.set(endpoint.id, exited);
    }
    for (const [id, worker] of this.lastWorkers.get(endpoint.id) ?? []) {
      if (!now.has(id) && worker.state !== "exited")
        exited.set(id, { ...worker, state: "exited", jobsHeld: 0 });
    }
    // Workers that died on their own are unhealthy, with why, until a later one proves healthy.
    for (const dead of this.sources.pool(endpoint.id)?.dead ?? []) {
      const last = exited.get(dead.id) ?? this.worker(dead.id, undefined);
      now.set(dead.id, { ...last, state: "unhealthy", unhealthy: dead.reason, jobsHeld: 0 });
    }
    for (const id of now.keys()) exited.delete(id);
    for (const id of [...exited.keys()].slice(0, Math.max(0, exited.size - EXITED_KEPT))) {
      exited.delete(id);
      this.jobsDone.delete(id);
    }
    for (const [id, worker] of exited) worker.jobsDone = this.jobsDone.get(id) ?? worker.jobsDone;
    this.lastWorkers.set(endpoint.id, now);
    return [...now.values(), ...[...exited.values()].reverse()];
  }

  private worker(id: string, record: WorkerRecord | undefined, forced?: WorkerState): ConsoleWorker {
    const worker: ConsoleWorker = {
      id,
      state: forced ?? stateOf(record),
      jobsDone: this.jobsDone.get(id) ?? 0,
      jobsHeld: record?.jobs.size ?? 0,
    };
    if (record?.unhealthy !== undefined) worker.unhealthy = record.unhealthy;
    return worker;
  }

  // ---- streams ---------------------------------------------------------------------------------

  /** /console/api/events: a snapshot, then `jobs`, `metrics` and `endpoints` deltas. */
  openEvents(reply: FastifyReply, jobLimit: number): void {
    const stream = new SseStream(reply);
    this.streams.add(stream);
    stream.onClose(() => this.streams.delete(stream));
    stream.send("snapshot", this.snapshot(jobLimit));
    this.lastEndpoints = "";
    this.schedule();
  }

  /** /console/api/logs/events: the worker's recent lines, then new ones as they are written. */
  openLogs(reply: FastifyReply, workerId: string | undefined): void {
    const stream = new SseStream(reply);
    const match = workerFilter(workerId);
    const reader: LogReader = { stream, match, pending: [], skipped: 0 };
    this.logReaders.add(reader);
    stream.onClose(() => this.logReaders.delete(reader));
    const backlog: LogDelta = { lines: this.sources.logs.recent(match, LOG_BACKLOG), skipped: 0 };
    stream.send("lines", backlog);
    this.schedule();
  }

  get readers(): number {
    return this.streams.size + this.logReaders.size;
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const off of this.unsubscribe) off();
    for (const stream of [...this.streams]) stream.close();
    for (const reader of [...this.logReaders]) reader.stream.close();
  }

  // ---- internals -------------------------------------------------------------------------------

  private jobChanged(job: JobRecord, added: boolean): void {
    const held = heldAs(job);
    if (held && !this.heldJobs.has(job.id)) {
      this.heldJobs.set(job.id, held);
      this.heldCounts(job.endpointId)[held]++;
    }
    if (added) this.metrics.request(job.endpointId, job.createdAt);
    if (added) {
      this.window.add(job.id);
      if (this.window.size > JOB_WINDOW) {
        const oldest = this.window.values().next().value;
        if (oldest !== undefined) this.window.delete(oldest);
      }
    }
    if (this.streams.size === 0) return;
    // Re-inserting keeps the map ordered by last change, so a flood sends the latest changes.
    this.dirty.delete(job.id);
    this.dirty.set(job.id, job);
  }

  /** A job's retention ended: it leaves the card's counts and the pages' lists together. */
  private jobForgotten(job: JobRecord): void {
    const held = this.heldJobs.get(job.id);
    if (held) {
      this.heldJobs.delete(job.id);
      this.heldCounts(job.endpointId)[held]--;
    }
    this.window.delete(job.id);
    this.dirty.delete(job.id);
    if (this.streams.size > 0) this.removed.push(job.id);
  }

  private heldCounts(endpointId: string): Record<Held, number> {
    let counts = this.held.get(endpointId);
    if (!counts) {
      counts = { completed: 0, failed: 0 };
      this.held.set(endpointId, counts);
    }
    return counts;
  }

  private lbRequest(endpointId: string, request: ProxyRequest): void {
    this.metrics.served(endpointId, request.at, request.status, request.ms);
    if (this.streams.size === 0) return;
    this.requests.push({ endpointId, request });
    if (this.requests.length > MAX_REQUESTS_PER_EVENT) this.requests.shift();
  }

  private logLine(line: LogLine): void {
    for (const reader of this.logReaders) {
      if (!reader.match(line)) continue;
      reader.pending.push(line);
      if (reader.pending.length > MAX_LINES_PER_EVENT) {
        reader.pending.shift();
        reader.skipped++;
      }
    }
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.flush(), this.sources.flushMs ?? 250);
    this.timer.unref();
  }

  /** Sends what changed since the last flush; stops the timer when nobody is reading. */
  flush(): void {
    if (this.readers === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.dirty.clear();
      this.removed = [];
      this.requests = [];
      return;
    }
    const events: string[] = [];
    if (this.dirty.size > 0 || this.removed.length > 0) {
      const changed = [...this.dirty.values()];
      this.dirty.clear();
      const sent = changed.slice(-MAX_JOBS_PER_EVENT);
      const delta: JobsDelta = {
        jobs: sent.map(consoleJob),
        skipped: changed.length - sent.length,
        totalJobs: this.sources.scheduler.jobs.size,
        removed: this.removed,
      };
      this.removed = [];
      events.push(sseEvent("jobs", delta));
    }
    if (this.requests.length > 0) {
      events.push(sseEvent("requests", { requests: this.requests } satisfies RequestsDelta));
      this.requests = [];
    }
    const buckets = this.metrics.takeChanged();
    if (buckets.length > 0) events.push(sseEvent("metrics", { buckets } satisfies MetricsDelta));
    if (this.streams.size > 0) {
      const endpoints = JSON.stringify(this.endpoints());
      if (endpoints !== this.lastEndpoints) {
        this.lastEndpoints = endpoints;
        events.push(`event: endpoints\ndata: ${endpoints}\n\n`);
      }
    }
    const text = events.join("");
    if (text !== "") for (const stream of this.streams) stream.sendRaw(text);
    for (const reader of this.logReaders) {
      if (reader.pending.length === 0) continue;
      const delta: LogDelta = { lines: reader.pending, skipped: reader.skipped };
      reader.pending = [];
      reader.skipped = 0;
      reader.stream.send("lines", delta);
    }
  }
}

function heldAs(job: JobRecord): Held | undefined {
  if (job.status === "COMPLETED") return "completed";
  if (job.status === "FAILED" || job.status === "TIMED_OUT") return "failed";
  return undefined;
}

function stateOf(record: WorkerRecord | undefined): WorkerState {
  if (!record) return "starting";
  if (record.unhealthy !== undefined) return "unhealthy";
  if (record.draining) return "stopping";
  if (record.readyAt === undefined) return "starting";
  return record.jobs.size > 0 ? "running" : "idle";
}

// The console's JobStatus is a copy of the platform's: this fails to compile if either gains a state.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const statusesMatch: Same<JobRecord["status"], ConsoleJob["status"]> = true;
void statusesMatch;
const requestsMatch: Same<ProxyRequest, LbRequest> = true;
void requestsMatch;
