// Jobs as the platform keeps them: states, records, the /status view, retention and TTL.
/** The platform's job states (docs/protocol.md §4.6). */
export type JobStatus = "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED" | "FAILED" | "CANCELLED" | "TIMED_OUT";

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set([
  "COMPLETED",
  "FAILED",
  "CANCELLED",
  "TIMED_OUT",
]);

export const isTerminal = (status: JobStatus): boolean => TERMINAL_STATUSES.has(status);

/** One job as the platform keeps it, from /run or /runsync until its retention ends. */
export interface JobRecord {
  id: string;
  endpointId: string;
  status: JobStatus;
  input: unknown;
  webhook?: string;
  /** The request's bucket for the worker's uploads (runpod-sdk's s3Config); sent with the job, never shown in /status. */
  s3Config?: Record<string, string>;
  /** Taken from the endpoint, or the request's `policy.executionTimeout`. */
  executionTimeoutMs: number;
  /** Submitted with /runsync: shorter retention. */
  sync: boolean;
  createdAt: number;
  takenAt?: number;
  finishedAt?: number;
  /** Queued → taken, in ms (docs/design.md §4.5). */
  delayTime?: number;
  /** Taken → done, in ms. */
  executionTime?: number;
  workerId?: string;
  /** Set once the job has output: progress while running, the result when done. */
  output?: unknown;
  hasOutput: boolean;
  error?: unknown;
  /** Chunks posted to job-stream, each `{output}`; `streamRead` is how many /stream has handed out. */
  stream: { output: unknown }[];
  streamRead: number;
  /** A generator ran it (job-stream chunks or `isStream=true`); otherwise /stream hands out the final output once. */
  streamed: boolean;
  outputStreamed: boolean;
  /** The final job-done body as posted (JSON), kept to tell a repeated post from a different one. */
  finalBody?: string;
  /** Times the job went back to the queue because its worker was lost. */
  retries: number;
  /** `policy.lowPriority`: the job waits for a worker but does not make the pool start one. */
  lowPriority: boolean;
  /** `policy.ttl`: the job's whole life from submission, queued, running or done; then it is deleted. */
  ttlMs: number;
  ttlAt: number;
  /** When /status stops knowing the job; set at the terminal state. */
  expiresAt?: number;
  /** Memory its payloads hold, counted at parse (src/http/json.ts jsonCost): the request, its latest job-done body, its stream. */
  inputBytes: number;
  outputBytes: number;
  streamBytes: number;
}

/** The payload bytes a job holds. */
export const heldBytes = (job: JobRecord): number => job.inputBytes + job.outputBytes + job.streamBytes;

/** The job as /status, /runsync, /cancel and webhooks show it. */
export interface JobView {
  id: string;
  status: JobStatus;
  delayTime?: number;
  executionTime?: number;
  workerId?: string;
  output?: unknown;
  error?: unknown;
  retries?: number;
}

export function jobView(job: JobRecord): JobView {
  const view: JobView = { id: job.id, status: job.status };
  if (job.delayTime !== undefined) view.delayTime = job.delayTime;
  if (job.executionTime !== undefined) view.executionTime = job.executionTime;
  if (job.workerId !== undefined) view.workerId = job.workerId;
  if (job.hasOutput) view.output = job.output;
  if (job.error !== undefined) view.error = job.error;
  if (job.retries > 0) view.retries = job.retries;
  return view;
}

/** How long finished jobs stay visible (the platform: /run 30 min, /runsync 1 min). */
export interface Retention {
  runMs: number;
  syncMs: number;
}

export const DEFAULT_RETENTION: Retention = { runMs: 30 * 60_000, syncMs: 60_000 };

/** The platform's job TTL: 24 h by default, at least 10 s, at most 7 days (policy.ttl, in ms). */
export const DEFAULT_TTL_MS = 24 * 60 * 60_000;
export const MIN_TTL_MS = 10_000;
export const MAX_TTL_MS = 7 * 24 * 60 * 60_000;

/** All jobs by id, with wake-ups for long-polls waiting on a job to change, and the payload bytes they hold. */
export class JobStore {
  private readonly jobs = new Map<string, JobRecord>();
  /** Finished jobs in the order they finished: the first to go when the memory budget needs room. */
  private readonly finished = new Set<JobRecord>();
  private held = 0;
  private finishedHeld = 0;
  private readonly watchers = new Map<string, Set<() => void>>();
  private readonly listeners = new Set<(job: JobRecord, added: boolean) => void>();
  private readonly forgetListeners = new Set<(job: JobRecord) => void>();

  constructor(
    private retention: Retention,
    private readonly now: () => number = Date.now,
  ) {}

  add(job: JobRecord): void {
    this.jobs.set(job.id, job);
    this.held += heldBytes(job);
    for (const listener of this.listeners) listener(job, true);
  }

  /** Called for every job added or changed (the console's live job table); returns the unsubscribe function. */
  onChange(listener: (job: JobRecord, added: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called for every job forgotten (retention or TTL ended): the console drops it; returns the unsubscribe function. */
  onForget(listener: (job: JobRecord) => void): () => void {
    this.forgetListeners.add(listener);
    return () => this.forgetListeners.delete(listener);
  }

  /** How long finished jobs stay; a change applies to jobs that finish from now on. */
  get retentionMs(): Retention {
    return { ...this.retention };
  }

  set retentionMs(retention: Retention) {
    this.retention = { ...retention };
  }

  get(id: string): JobRecord | undefined {
    const job = this.jobs.get(id);
    if (job?.expiresAt !== undefined && job.expiresAt <= this.now()) {
      this.delete(id);
      return undefined;
    }
    return job;
  }

  get size(): number {
    return this.jobs.size;
  }

  /** Payload bytes every job held holds. */
  get heldBytes(): number {
    return this.held;
  }

  /** Payload bytes of jobs not yet finished: what no retention can free. */
  get unfinishedBytes(): number {
    return this.held - this.finishedHeld;
  }

  /** Finished jobs, the one that finished first first. */
  finishedOldestFirst(): IterableIterator<JobRecord> {
    return this.finished.values();
  }

  /** Changes what a job's payloads hold (`change` sets its byte counts), keeping the totals. */
  resize(job: JobRecord, change: (job: JobRecord) => void): void {
    const before = heldBytes(job);
    change(job);
    if (this.jobs.get(job.id) !== job) return;
    const delta = heldBytes(job) - before;
    this.held += delta;
    if (this.finished.has(job)) this.finishedHeld += delta;
  }

  /** Starts the retention clock of a job that just reached a terminal state (never past its TTL). */
  retain(job: JobRecord): void {
    const kept = (job.finishedAt ?? this.now()) + (job.sync ? this.retention.syncMs : this.retention.runMs);
    job.expiresAt = Math.min(kept, job.ttlAt);
    if (this.jobs.get(job.id) !== job || this.finished.has(job)) return;
    this.finished.add(job);
    this.finishedHeld += heldBytes(job);
  }

  /** A finished job runs again (retry): no retention clock, and no longer first to go. */
  reopen(job: JobRecord): void {
    delete job.expiresAt;
    if (this.finished.delete(job)) this.finishedHeld -= heldBytes(job);
  }

  /** Jobs not finished whose TTL has passed. */
  overdue(): JobRecord[] {
    const now = this.now();
    return [...this.jobs.values()].filter((job) => job.expiresAt === undefined && job.ttlAt <= now);
  }

  /** Forgets a job now (its TTL passed). */
  forget(id: string): void {
    this.delete(id);
  }

  /** Forgets jobs whose retention ended; returns how many. */
  sweep(): number {
    const now = this.now();
    let removed = 0;
    for (const [id, job] of this.jobs) {
      if (job.expiresAt !== undefined && job.expiresAt <= now) {
        this.delete(id);
        removed++;
      }
    }
    return removed;
  }

  /** Wakes every long-poll waiting on this job. */
  changed(job: JobRecord): void {
    for (const listener of this.listeners) listener(job, false);
    const set = this.watchers.get(job.id);
    if (!set) return;
    this.watchers.delete(job.id);
    for (const wake of set) wake();
  }

  /** Registers a wake-up for the job's next change; returns the unregister function. */
  watch(jobId: string, wake: () => void): () => void {
    let set = this.watchers.get(jobId);
    if (!set) {
      set = new Set();
      this.watchers.set(jobId, set);
    }
    set.add(wake);
    return () => {
      this.watchers.get(jobId)?.delete(wake);
    };
  }

  private delete(id: string): void {
    const job = this.jobs.get(id);
    this.jobs.delete(id);
    if (job) {
      this.held -= heldBytes(job);
      if (this.finished.delete(job)) this.finishedHeld -= heldBytes(job);
      for (const listener of this.forgetListeners) listener(job);
    }
    const set = this.watchers.get(id);
    this.watchers.delete(id);
    if (set) for (const wake of set) wake();
  }
}
