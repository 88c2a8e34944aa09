// The platform's scheduler: every endpoint's jobs from queue to worker to done, timeouts, cancels, retries.

import { NameTakenError } from "../../flash-error.js";
import type { Logger } from "../../log/index.js";
import { PlatformMemoryFull } from "./budget.js";
import { type EndpointConfig, type EndpointCounters, EndpointState, type WorkerRecord } from "./endpoint.js";
import { newJobId } from "./ids.js";
import {
  DEFAULT_TTL_MS,
  isTerminal,
  type JobRecord,
  type JobStatus,
  JobStore,
  type Retention,
} from "./jobs.js";
import { longPoll } from "./long-poll.js";

export interface SchedulerOptions {
  retention: Retention;
  /** A worker that holds jobs and has made no request for this long is lost; its jobs are requeued. */
  workerLostMs: number;
  /** Payload bytes jobs may hold (FLASH_PLATFORM_MEMORY_MB; default: no bound). */
  memoryBytes?: number;
  logger: Logger;
  now?: () => number;
}

export interface SubmitRequest {
  input: unknown;
  webhook?: string;
  s3Config?: Record<string, string>;
  /** `policy.executionTimeout` of the request, overriding the endpoint's. */
  executionTimeoutMs?: number;
  /** `policy.ttl` (default 24 h) and `policy.lowPriority`. */
  ttlMs?: number;
  lowPriority?: boolean;
  sync: boolean;
  /** What the request's payload holds in memory (src/http/json.ts jsonCost), charged to the budget. */
  bytes?: number;
}

/** A body posted to job-done (docs/protocol.md §3.4, §3.6, §15). */
export interface ResultBody {
  status?: unknown;
  output?: unknown;
  error?: unknown;
  stopPod?: unknown;
}

/**
 * What became of a worker's post: taken in, ignored as a repeat, refused because the worker does not hold the job,
 * or refused because the job already has a different final result (the first one stands; docs/protocol.md §3.4).
 */
export type PostOutcome = "accepted" | "ignored" | "not-held" | "conflict";

export interface HealthJobs extends EndpointCounters {
  inProgress: number;
  inQueue: number;
}

type JobListener = (job: JobRecord) => void;

/** Pings in a row that must leave out a held job before it counts as never received. */
const UNREPORTED_PINGS = 2;
/** A job taken this recently may be missing from a ping that crossed its job-take answer. */
const UNREPORTED_GRACE_MS = 1000;
/**
 * A worker whose event loop is alive polls job-stop again at once after a stop; one that has not within
 * this long is blocked in a handler (CPU-bound work ignores the abort signal) and is replaced.
 */
export const STUCK_AFTER_STOP_MS = 3000;

/** A worker that did not come back after a stop: its id and the stopped job it is still running. */
export type StuckListener = (endpoint: EndpointState, workerId: string, jobId: string) => void;

/**
 * The job lifecycle of every endpoint: queue → taken by a worker → done, with the execution timeout,
 * cancel, retry and lost-worker requeue that move jobs between those states.
 */
export class Scheduler {
  readonly jobs: JobStore;
  private readonly endpoints = new Map<string, EndpointState>();
  private readonly timeouts = new Map<JobRecord, NodeJS.Timeout>();
  private readonly closing = new AbortController();
  private readonly terminalListeners = new Set<JobListener>();
  private readonly queuedListeners = new Set<(endpoint: EndpointState) => void>();
  private readonly stuckListeners = new Set<StuckListener>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly memoryBytes: number;

  constructor(private readonly options: SchedulerOptions) {
    this.now = options.now ?? Date.now;
    this.log = options.logger;
    this.memoryBytes = options.memoryBytes ?? Number.POSITIVE_INFINITY;
    this.jobs = new JobStore(options.retention, this.now);
    const every = Math.max(50, Math.min(1_000, Math.floor(options.workerLostMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  // ---- endpoints -------------------------------------------------------------------------------

  addEndpoint(config: EndpointConfig): EndpointState {
    if (this.endpoints.has(config.id)) throw new NameTakenError(`Endpoint ${config.id} already exists`);
    const endpoint = new EndpointState(config, (job, worker) => this.assign(endpoint, job, worker), this.now);
    this.endpoints.set(config.id, endpoint);
    return endpoint;
  }

  endpoint(id: string): EndpointState | undefined {
    return this.endpoints.get(id);
  }

  listEndpoints(): EndpointState[] {
    return [...this.endpoints.values()];
  }

  /** Removes an endpoint; its unfinished jobs end CANCELLED so none is left without a terminal state. */
  removeEndpoint(id: string): boolean {
    const endpoint = this.endpoints.get(id);
    if (!endpoint) return false;
    for (const job of endpoint.queue.purge())
      this.finish(endpoint, job, "CANCELLED", { error: "Endpoint deleted" });
    for (const worker of endpoint.workers.values()) {
      for (const job of [...worker.jobs]) this.stop(endpoint, job, "CANCELLED", "Endpoint deleted");
    }
    this.endpoints.delete(id);
    return true;
  }

  // ---- client side -----------------------------------------------------------------------------

  /** Queues a job; a PlatformMemoryFull when unfinished jobs leave its payload no room in the budget. */
  submit(endpoint: EndpointState, request: SubmitRequest): JobRecord {
    const bytes = request.bytes ?? 0;
    this.makeRoom(bytes);
    const now = this.now();
    const ttlMs = request.ttlMs ?? DEFAULT_TTL_MS;
    const job: JobRecord = {
      id: newJobId(request.sync),
      endpointId: endpoint.id,
      status: "IN_QUEUE",
      input: request.input,
      executionTimeoutMs: request.executionTimeoutMs ?? endpoint.config.executionTimeoutMs,
      sync: request.sync,
      createdAt: now,
      hasOutput: false,
      stream: [],
      streamRead: 0,
      streamed: false,
      outputStreamed: false,
      retries: 0,
      lowPriority: request.lowPriority ?? false,
      ttlMs,
      ttlAt: now + ttlMs,
      inputBytes: bytes,
      outputBytes: 0,
      streamBytes: 0,
    };
    if (request.webhook !== undefined) job.webhook = request.webhook;
    if (request.s3Config !== undefined) job.s3Config = request.s3Config;
    this.jobs.add(job);
    endpoint.queue.push(job);
    this.emitQueued(endpoint);
    return job;
  }

  /** A PlatformMemoryFull when jobs not yet finished leave no room for `bytes` more in the memory budget. */
  checkRoom(bytes: number): void {
    const unfinished = this.jobs.unfinishedBytes;
    if (unfinished + bytes > this.memoryBytes)
      throw new PlatformMemoryFull(bytes, unfinished, this.memoryBytes);
  }

  /** The endpoint's job, or undefined when unknown, expired or another endpoint's. */
  job(endpoint: EndpointState, id: string): JobRecord | undefined {
    const job = this.jobs.get(id);
    return job && job.endpointId === endpoint.id ? job : undefined;
  }

  /**
   * Resolves on the job's next change, after `waitMs`, or when the signal aborts. `onChange` runs at the change
   * itself, before the post that made it is answered: a relay writes the news to its client first.
   */
  waitForChange(job: JobRecord, waitMs: number, signal: AbortSignal, onChange?: () => void): Promise<void> {
    return longPoll<void>(waitMs, [signal, this.closing.signal], undefined, (wake) =>
      this.jobs.watch(job.id, () => {
        onChange?.();
        wake();
      }),
    );
  }

  /** Waits until the job is terminal or `waitMs` has passed; returns the job either way. */
  async waitForTerminal(job: JobRecord, waitMs: number, signal: AbortSignal): Promise<JobRecord> {
    const deadline = this.now() + waitMs;
    while (!isTerminal(job.status) && !signal.aborted && !this.closing.signal.aborted) {
      const left = deadline - this.now();
      if (left <= 0) break;
      await this.waitForChange(job, left, signal);
    }
    return job;
  }

  cancel(endpoint: EndpointState, job: JobRecord): JobRecord {
    if (job.status === "IN_QUEUE") {
      endpoint.queue.remove(job);
      this.finish(endpoint, job, "CANCELLED", {});
    } else if (job.status === "IN_PROGRESS") {
      this.stop(endpoint, job, "CANCELLED");
    }
    return job;
  }

  /** Requeues a FAILED or TIMED_OUT job under the same id; false for any other state. */
  retry(endpoint: EndpointState, job: JobRecord): boolean {
    if (job.status !== "FAILED" && job.status !== "TIMED_OUT") return false;
    this.jobs.reopen(job);
    job.status = "IN_QUEUE";
    job.createdAt = this.now();
    job.ttlAt = job.createdAt + job.ttlMs;
    for (const key of ["takenAt", "finishedAt", "delayTime", "executionTime", "workerId", "error"] as const) {
      delete job[key];
    }
    delete job.output;
    job.hasOutput = false;
    this.resetStream(job);
    endpoint.counters.retried++;
    endpoint.queue.push(job);
    this.jobs.changed(job);
    this.emitQueued(endpoint);
    return true;
  }

  /** Cancels every queued job; running jobs keep running (the platform's purge-queue). */
  purge(endpoint: EndpointState): number {
    const removed = endpoint.queue.purge();
    for (const job of removed) this.finish(endpoint, job, "CANCELLED", { error: "Removed by purge-queue" });
    return removed.length;
  }

  health(endpoint: EndpointState): HealthJobs {
    return { ...endpoint.counters, inProgress: endpoint.inProgress, inQueue: endpoint.queue.size };
  }

  // ---- worker side -----------------------------------------------------------------------------

  /** Records that the worker made a request; returns the function that ends a long-poll it holds open. */
  seen(endpoint: EndpointState, workerId: string, longPolling = false): () => void {
    const worker = endpoint.worker(workerId);
    worker.lastSeen = this.now();
    if (!longPolling) return () => {};
    worker.openPolls++;
    return () => {
      worker.openPolls--;
      worker.lastSeen = this.now();
    };
  }

  /** job-take: up to `max` jobs, waiting up to `waitMs` for the first (docs/protocol.md §3.2). */
  take(
    endpoint: EndpointState,
    workerId: string,
    max: number,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<JobRecord[]> {
    const worker = endpoint.worker(workerId);
    worker.readyAt ??= this.now();
    const gone = signal.aborted || this.closing.signal.aborted;
    if (gone || worker.draining) return Promise.resolve([]);
    const ready = endpoint.queue.takeNow(workerId, max);
    if (ready.length > 0) return Promise.resolve(ready);
    return longPoll<JobRecord[]>(waitMs, [signal, this.closing.signal], [], (deliver) =>
      endpoint.queue.wait({ workerId, max, deliver }),
    );
  }

  /** The job-take answer never reached the worker (it disconnected first): the jobs go back, uncounted. */
  undelivered(endpoint: EndpointState, workerId: string, jobs: JobRecord[]): void {
    const worker = endpoint.workers.get(workerId);
    for (const job of jobs) {
      if (job.status !== "IN_PROGRESS" || job.workerId !== workerId || !worker?.jobs.has(job)) continue;
      this.log
        .child({ requestId: job.id })
        .warn(`Worker:${workerId} | job-take answer not delivered; job requeued`);
      this.requeue(endpoint, worker, job);
    }
  }

  /**
   * job-done: a progress update (`status: IN_PROGRESS`) or the final result (docs/protocol.md §3.4, §3.6); `bytes`
   * is what the body holds. A result is never refused for memory: finished jobs make room for it, oldest first.
   */
  done(
    endpoint: EndpointState,
    workerId: string,
    job: JobRecord,
    body: ResultBody,
    isStream: boolean,
    bytes = 0,
  ): PostOutcome {
    const worker = endpoint.workers.get(workerId);
    const holds = job.status === "IN_PROGRESS" && job.workerId === workerId && worker?.jobs.has(job) === true;
    if (!holds) {
      const repeat = job.finalBody === undefined || body.status === "IN_PROGRESS";
      if (repeat || job.workerId !== workerId || JSON.stringify(body) === job.finalBody) {
        return this.refuse(job, workerId, "job-done");
      }
      this.log
        .child({ requestId: job.id })
        .warn(
          `Worker:${workerId} | job-done refused: the job already has a different final result, which stands`,
        );
      return "conflict";
    }
    this.jobs.resize(job, (j) => {
      j.outputBytes = bytes;
    });
    this.freeFinished(0, job);
    if (body.status === "IN_PROGRESS") {
      job.output = body.output;
      job.hasOutput = true;
      this.jobs.changed(job);
      return "accepted";
    }
    if (isStream) job.streamed = true;
    job.finalBody = JSON.stringify(body);
    const failed = Boolean(body.error);
    if (failed) {
      // A failure has its error, not the last progress update as its output.
      delete job.output;
      job.hasOutput = false;
    }
    const fields: { output?: unknown; error?: unknown } = {};
    if ("output" in body) fields.output = body.output;
    if (failed) fields.error = body.error;
    this.finish(endpoint, job, failed ? "FAILED" : "COMPLETED", fields);
    if (body.stopPod === true)
      this.log.child({ subject: workerId }).info(`Worker:${workerId} | stopPod requested`);
    return "accepted";
  }

  /**
   * job-stream: one chunk `{output}` of a generator handler (docs/protocol.md §3.5), holding `bytes`; a
   * PlatformMemoryFull when unfinished jobs leave it no room in the budget.
   */
  streamChunk(
    endpoint: EndpointState,
    workerId: string,
    job: JobRecord,
    body: ResultBody,
    bytes = 0,
  ): PostOutcome {
    const worker = endpoint.workers.get(workerId);
    const holds = job.status === "IN_PROGRESS" && job.workerId === workerId && worker?.jobs.has(job) === true;
    if (!holds) return this.refuse(job, workerId, "job-stream");
    this.makeRoom(bytes);
    this.jobs.resize(job, (j) => {
      j.streamBytes += bytes;
    });
    job.stream.push({ output: body.output });
    job.streamed = true;
    this.jobs.changed(job);
    return "accepted";
  }

  /** job-stop: the ids of the worker's jobs that were cancelled or timed out (docs/protocol.md §3.3). */
  stopPoll(
    endpoint: EndpointState,
    workerId: string,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<string[]> {
    const worker = endpoint.worker(workerId);
    // A new poll: the worker's event loop is alive and has seen every stop sent before.
    for (const [jobId, at] of worker.stoppedAt) if (at <= this.now()) worker.stoppedAt.delete(jobId);
    if (worker.stops.length > 0) return Promise.resolve(worker.stops.splice(0));
    return longPoll<string[]>(waitMs, [signal, this.closing.signal], [], (deliver) => {
      const wake = () => deliver(worker.stops.splice(0));
      worker.wakeStop = wake;
      return () => {
        if (worker.wakeStop === wake) delete worker.wakeStop;
      };
    });
  }

  /**
   * ping: liveness, and a fitness failure when `status=unhealthy` (docs/protocol.md §3.7, §3.8).
   * `jobIds` is the ping's `job_id` list: a job this worker holds but leaves out of two pings in a row
   * never reached it (its job-take answer was lost on the way), so it goes back to the queue.
   */
  ping(endpoint: EndpointState, workerId: string, unhealthy?: string, jobIds?: readonly string[]): void {
    const worker = endpoint.worker(workerId);
    const now = this.now();
    worker.lastSeen = now;
    if (unhealthy !== undefined) {
      worker.unhealthy = unhealthy;
      this.log.child({ subject: workerId }).error(`Worker:${workerId} | reported unhealthy: ${unhealthy}`);
    }
    if (jobIds === undefined) return;
    const listed = new Set(jobIds);
    for (const job of [...worker.jobs]) {
      if (listed.has(job.id)) {
        worker.unreported.delete(job);
        continue;
      }
      // A ping sent just before the take answer arrived cannot name the job: only older jobs count.
      if ((job.takenAt ?? now) > now - UNREPORTED_GRACE_MS) continue;
      const misses = (worker.unreported.get(job) ?? 0) + 1;
      worker.unreported.set(job, misses);
      if (misses < UNREPORTED_PINGS) continue;
      worker.unreported.delete(job);
      // A failed attempt like a lost worker: a job that never reaches any worker ends FAILED after its retries.
      this.attemptFailed(
        endpoint,
        worker,
        job,
        `job missing from ${misses} pings in a row; its job-take answer was lost`,
        `Worker ${workerId} never received the job (missing from ${misses} pings in a row: its job-take answer was lost)`,
      );
    }
  }

  /** A job handed out that cannot be written as JSON for its worker: FAILED now, as no retry could send it. */
  undeliverable(endpoint: EndpointState, job: JobRecord, error: string): void {
    this.log.child({ requestId: job.id }).error(`Worker:${job.workerId} | ${error}; job failed`);
    this.finish(endpoint, job, "FAILED", { error });
  }

  /** The worker is being stopped: it gets no more jobs, and its parked job-takes end empty. */
  drain(endpoint: EndpointState, workerId: string): void {
    endpoint.worker(workerId).draining = true;
    endpoint.queue.release(workerId);
  }

  /** The worker is gone (exited, or stopped pinging): its jobs go back to the queue or fail after the retry limit. */
  workerGone(endpoint: EndpointState, workerId: string, reason: string): void {
    const worker = endpoint.workers.get(workerId);
    if (!worker) return;
    endpoint.workers.delete(workerId);
    for (const job of [...worker.jobs]) {
      this.attemptFailed(endpoint, worker, job, reason, `Worker ${workerId} was lost (${reason})`);
    }
  }

  // ---- events ----------------------------------------------------------------------------------

  /** Called once per job each time it reaches a terminal state (webhooks, logs). */
  /** Called for a worker still silent STUCK_AFTER_STOP_MS after one of its jobs was stopped. */
  onStuck(listener: StuckListener): () => void {
    this.stuckListeners.add(listener);
    return () => this.stuckListeners.delete(listener);
  }

  onTerminal(listener: JobListener): () => void {
    this.terminalListeners.add(listener);
    return () => this.terminalListeners.delete(listener);
  }

  /** Called whenever jobs are queued (the pool scales up on it). */
  onQueued(listener: (endpoint: EndpointState) => void): () => void {
    this.queuedListeners.add(listener);
    return () => this.queuedListeners.delete(listener);
  }

  get closed(): boolean {
    return this.closing.signal.aborted;
  }

  /** Ends every long-poll and timer so the server can close at once. */
  close(): void {
    this.closing.abort();
    clearInterval(this.sweeper);
    for (const timer of this.timeouts.values()) clearTimeout(timer);
    this.timeouts.clear();
  }

  // ---- internals -------------------------------------------------------------------------------

  /** A run that ended without a result: back to the queue while the job has retries left, else FAILED saying why. */
  private attemptFailed(
    endpoint: EndpointState,
    worker: WorkerRecord,
    job: JobRecord,
    reason: string,
    failure: string,
  ): void {
    const log = this.log.child({ requestId: job.id });
    const max = endpoint.config.maxRetries;
    if (job.retries < max) {
      job.retries++;
      endpoint.counters.retried++;
      log.warn(`Worker:${worker.id} | ${reason}; job requeued (retry ${job.retries} of ${max})`);
      this.requeue(endpoint, worker, job);
      return;
    }
    log.error(`Worker:${worker.id} | ${reason}; job failed after ${job.retries} retries`);
    this.finish(endpoint, job, "FAILED", { error: `${failure} and the job had no retries left (${max})` });
  }

  /** Room for `bytes` more in the memory budget: finished jobs go, oldest first; a PlatformMemoryFull if unfinished ones fill it. */
  private makeRoom(bytes: number): void {
    this.checkRoom(bytes);
    this.freeFinished(bytes);
  }

  /** Forgets finished jobs, oldest first (never `keep`), until `bytes` more fit in the memory budget or none is left. */
  private freeFinished(bytes: number, keep?: JobRecord): void {
    // Forgetting a job while iterating is safe for a Set; the first check ends the loop at once when nothing must go.
    for (const job of this.jobs.finishedOldestFirst()) {
      if (this.jobs.heldBytes + bytes <= this.memoryBytes) return;
      if (job === keep) continue;
      this.log
        .child({ requestId: job.id })
        .warn(
          `Job forgotten before its retention ended: the platform's memory budget for job payloads (FLASH_PLATFORM_MEMORY_MB) needed room; finished jobs go oldest first`,
        );
      this.jobs.forget(job.id);
    }
  }

  private assign(endpoint: EndpointState, job: JobRecord, worker: WorkerRecord): void {
    const now = this.now();
    job.status = "IN_PROGRESS";
    job.workerId = worker.id;
    job.takenAt = now;
    job.delayTime = now - job.createdAt;
    worker.jobs.add(job);
    worker.lastSeen = now;
    endpoint.inProgress++;
    const timer = setTimeout(() => this.timedOut(endpoint, job), job.executionTimeoutMs);
    timer.unref();
    this.timeouts.set(job, timer);
    this.jobs.changed(job);
    this.log.child({ requestId: job.id }).info(`Worker:${worker.id} | Delay Time: ${job.delayTime} ms`);
  }

  private timedOut(endpoint: EndpointState, job: JobRecord): void {
    this.timeouts.delete(job);
    if (job.status !== "IN_PROGRESS") return;
    this.stop(endpoint, job, "TIMED_OUT", `Execution timeout after ${job.executionTimeoutMs} ms`);
  }

  /** Ends a running job from the platform side and tells its worker to stop it. */
  private stop(
    endpoint: EndpointState,
    job: JobRecord,
    status: "CANCELLED" | "TIMED_OUT",
    error?: string,
  ): void {
    const worker = job.workerId === undefined ? undefined : endpoint.workers.get(job.workerId);
    // Progress shown while it ran is not its output.
    delete job.output;
    job.hasOutput = false;
    this.finish(endpoint, job, status, error === undefined ? {} : { error });
    if (worker) {
      worker.stops.push(job.id);
      worker.stoppedAt.set(job.id, this.now());
      worker.wakeStop?.();
    }
  }

  /** Back to the queue front: the job keeps its place in line and its id. */
  private requeue(endpoint: EndpointState, worker: WorkerRecord, job: JobRecord): void {
    this.release(endpoint, job, worker);
    job.status = "IN_QUEUE";
    for (const key of ["takenAt", "delayTime", "workerId"] as const) delete job[key];
    delete job.output;
    job.hasOutput = false;
    this.resetStream(job);
    endpoint.queue.push(job, true);
    this.jobs.changed(job);
    this.emitQueued(endpoint);
  }

  /** Takes a running job off its worker. */
  private release(endpoint: EndpointState, job: JobRecord, worker: WorkerRecord | undefined): void {
    const timer = this.timeouts.get(job);
    if (timer) clearTimeout(timer);
    this.timeouts.delete(job);
    if (job.status === "IN_PROGRESS") endpoint.inProgress--;
    worker?.unreported.delete(job);
    if (worker?.jobs.delete(job) && worker.jobs.size === 0) worker.idleSince = this.now();
  }

  private finish(
    endpoint: EndpointState,
    job: JobRecord,
    status: JobStatus,
    fields: { output?: unknown; error?: unknown },
  ): void {
    const worker = job.workerId === undefined ? undefined : endpoint.workers.get(job.workerId);
    this.release(endpoint, job, worker);
    const now = this.now();
    job.status = status;
    job.finishedAt = now;
    if (job.takenAt === undefined) {
      job.delayTime = now - job.createdAt;
      job.executionTime = 0;
    } else {
      job.executionTime = now - job.takenAt;
    }
    if ("output" in fields) {
      job.output = fields.output;
      job.hasOutput = true;
    }
    if (fields.error !== undefined) job.error = fields.error;
    if (status === "COMPLETED") endpoint.counters.completed++;
    else if (status === "FAILED" || status === "TIMED_OUT") endpoint.counters.failed++;
    this.jobs.retain(job);
    this.jobs.changed(job);
    if (job.workerId !== undefined) {
      this.log
        .child({ requestId: job.id })
        .info(`Worker:${job.workerId} | Execution Time: ${job.executionTime} ms`);
    }
    for (const listener of this.terminalListeners) listener(job);
  }

  private refuse(job: JobRecord, workerId: string, route: string): PostOutcome {
    // A repeat from the worker that ran the job (a retried post, or a late one after cancel/timeout) is harmless.
    if (isTerminal(job.status) && job.workerId === workerId) return "ignored";
    this.log
      .child({ requestId: job.id })
      .warn(
        `Worker:${workerId} | ${route} refused: the worker does not hold this job (status ${job.status})`,
      );
    return "not-held";
  }

  /** The periodic checks, run now: retention and TTL ends, and workers that stopped calling in. */
  sweep(): void {
    this.jobs.sweep();
    for (const job of this.jobs.overdue()) this.expire(job);
    const now = this.now();
    for (const endpoint of this.endpoints.values()) {
      for (const worker of [...endpoint.workers.values()]) {
        for (const [jobId, at] of worker.stoppedAt) {
          if (now - at < STUCK_AFTER_STOP_MS) continue;
          worker.stoppedAt.delete(jobId);
          for (const listener of this.stuckListeners) listener(endpoint, worker.id, jobId);
        }
        if (worker.openPolls > 0 || now - worker.lastSeen <= this.options.workerLostMs) continue;
        if (worker.jobs.size > 0) this.workerGone(endpoint, worker.id, "stopped pinging");
        else endpoint.workers.delete(worker.id);
      }
    }
  }

  /** A job whose TTL passed before it finished is deleted, queued or running; its worker is told to stop. */
  private expire(job: JobRecord): void {
    const endpoint = this.endpoints.get(job.endpointId);
    if (endpoint) {
      endpoint.queue.remove(job);
      const worker = job.workerId === undefined ? undefined : endpoint.workers.get(job.workerId);
      if (job.status === "IN_PROGRESS" && worker) {
        this.release(endpoint, job, worker);
        worker.stops.push(job.id);
        worker.wakeStop?.();
      }
    }
    this.log
      .child({ requestId: job.id })
      .warn(
        `Job expired ${job.status === "IN_QUEUE" ? "in the queue" : "while running"}: its TTL of ${job.ttlMs} ms passed; deleted`,
      );
    this.jobs.forget(job.id);
  }

  /** A job that runs again: no stream chunks and no result yet, and the bytes they held freed. */
  private resetStream(job: JobRecord): void {
    this.jobs.resize(job, (j) => {
      j.outputBytes = 0;
      j.streamBytes = 0;
    });
    job.stream = [];
    job.streamRead = 0;
    job.streamed = false;
    job.outputStreamed = false;
  }

  private emitQueued(endpoint: EndpointState): void {
    for (const listener of this.queuedListeners) listener(endpoint);
  }
}
