// One endpoint on the platform: its settings, queue, workers and the counters /health reports.
import type { JobRecord } from "./jobs.js";

/**
 * A worker process from the environment it must run with: its argv, which holds no value of that environment (`ps`
 * shows every argv to every local user), and the variables its process gets besides the platform's own.
 */
export interface LaunchCommand {
  argv: string[];
  env: Record<string, string>;
}

export type WorkerLaunch = (env: Record<string, string>) => LaunchCommand;

import { JobQueue } from "./queue.js";

/** What an endpoint is made of: how its jobs run and, when the platform spawns them, its workers. */
export interface EndpointConfig {
  id: string;
  name: string;
  /** Execution timeout per job (the platform's default: 10 min). */
  executionTimeoutMs: number;
  /** Requeues after a lost worker before the job fails. */
  maxRetries: number;
  /** Worker processes to keep: at least min, at most max. */
  workers: [min: number, max: number];
  /** A spawned worker idle this long above min is stopped (the platform's default idle timeout: 5 s). */
  idleTimeoutMs: number;
  /** argv of a worker process; without it (or `launch`) the endpoint only serves workers started elsewhere. */
  command?: string[];
  /** The process of a worker given its environment (a container run: the tool's argv and environment). */
  launch?: WorkerLaunch;
  cwd?: string;
  env: Record<string, string>;
  /** The handler's test_input.json for the console's playground: a job body, or a route call's {method, path, body}. */
  sample?: string;
  /** Its handler is chat-completion compatible (openaiCompatible()): the console offers a chat form. */
  openaiCompatible?: boolean;
  /** How long its workers may take to start, when not the platform's limit. */
  initTimeoutMs?: number;
  /** The app's OpenAPI document as JSON, when the platform's caller loaded the app (flash dev). */
  openapi?: string;
  /** Refuses a job at /run and /runsync whose input fails the handler's schema (validateAtSubmit): the message. */
  checkInput?: (input: unknown) => Promise<string | undefined>;
}

export const ENDPOINT_DEFAULTS = {
  executionTimeoutMs: 600_000,
  maxRetries: 3,
  workers: [0, 1] as [number, number],
  idleTimeoutMs: 5_000,
};

/** A worker as the platform sees it: known from its requests, with the jobs it holds. */
export interface WorkerRecord {
  id: string;
  /** Its first request. */
  firstSeen: number;
  /**
   * Its first job-take: from then it is ready (the console's cold start: this minus the process start). A worker
   * with a model server pings while the server loads and asks for a job once it answers its health check.
   */
  readyAt?: number;
  /** Last request start or end. */
  lastSeen: number;
  /** Long-polls it has open right now; an open poll means it is alive. */
  openPolls: number;
  jobs: Set<JobRecord>;
  /** Job ids to hand out on its next job-stop poll. */
  stops: string[];
  wakeStop?: () => void;
  /** Set by a ping with `status=unhealthy` (docs/protocol.md §3.8). */
  unhealthy?: string;
  /** When it last held no job, for the pool's idle timeout. */
  idleSince: number;
  /** Being stopped by the pool: it gets no more jobs. */
  draining?: boolean;
  /** Held jobs its pings have left out, and how many pings in a row. */
  unreported: Map<JobRecord, number>;
  /** Jobs stopped from the platform side (cancel, timeout), by id: when, until its next job-stop poll shows it alive. */
  stoppedAt: Map<string, number>;
}

/** Counters /health reports. */
export interface EndpointCounters {
  completed: number;
  failed: number;
  retried: number;
}

export class EndpointState {
  readonly queue: JobQueue;
  readonly workers = new Map<string, WorkerRecord>();
  readonly counters: EndpointCounters = { completed: 0, failed: 0, retried: 0 };
  inProgress = 0;

  constructor(
    public config: EndpointConfig,
    assign: (job: JobRecord, worker: WorkerRecord) => void,
    private readonly now: () => number,
  ) {
    this.queue = new JobQueue((job, workerId) => assign(job, this.worker(workerId)));
  }

  get id(): string {
    return this.config.id;
  }

  /** The worker's record, created on its first request. */
  worker(id: string): WorkerRecord {
    let worker = this.workers.get(id);
    if (!worker) {
      const now = this.now();
      worker = {
        id,
        firstSeen: now,
        lastSeen: now,
        openPolls: 0,
        jobs: new Set(),
        stops: [],
        idleSince: now,
        unreported: new Map(),
        stoppedAt: new Map(),
      };
      this.workers.set(id, worker);
    }
    return worker;
  }
}
