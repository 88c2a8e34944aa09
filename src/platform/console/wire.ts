// What the console's API and event stream send: shared by the server and the page (types only, no code, and
// no imports, so the page's own build stays inside src/platform/console).

/** The platform's job states (jobs.ts JobStatus; hub.ts assigns one to the other, so they cannot drift apart). */
export type JobStatus = "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED" | "FAILED" | "CANCELLED" | "TIMED_OUT";

/** A job as the console's table shows it; outputs are previews, the full job is GET /console/api/jobs/<id>. */
export interface ConsoleJob {
  id: string;
  endpointId: string;
  status: JobStatus;
  /** Queued at, ms since epoch. */
  createdAt: number;
  finishedAt?: number;
  delayTime?: number;
  executionTime?: number;
  workerId?: string;
  sync: boolean;
  retries: number;
  /** The result (terminal) or the last progress update (IN_PROGRESS), as JSON cut to a preview. */
  output?: string;
  error?: string;
  /** Stream chunks posted so far. */
  chunks: number;
}

/** GET /console/api/jobs/<id>: the whole job. */
export interface ConsoleJobDetail extends ConsoleJob {
  input: unknown;
  output?: string;
  outputValue?: unknown;
  errorValue?: unknown;
  stream: unknown[];
  executionTimeoutMs: number;
  webhook?: string;
}

export type WorkerState = "starting" | "idle" | "running" | "unhealthy" | "stopping" | "exited";

export interface ConsoleWorker {
  id: string;
  state: WorkerState;
  pid?: number;
  /** Process start, when the platform spawned it. */
  startedAt?: number;
  /** Process start → first request to the platform, in ms. */
  coldStartMs?: number;
  /** Jobs it finished (any terminal state). */
  jobsDone: number;
  /** Jobs it holds now. */
  jobsHeld: number;
  unhealthy?: string;
  /** The GPUs of a worker this platform spawned (it runs on this host), e.g. "NVIDIA H200". */
  gpu?: string;
}

export interface ConsoleEndpoint {
  id: string;
  name: string;
  kind: "queue" | "load-balanced";
  /** The client API base: /v2/<id> or /lb/<id>. */
  path: string;
  workers: [min: number, max: number];
  inQueue: number;
  inProgress: number;
  /** Finished jobs the platform still holds (its list can show them): they leave when their retention ends. */
  completed: number;
  /** Failed or timed-out jobs the platform still holds, as `completed`. */
  failed: number;
  /** Requeues since the platform started. */
  retried: number;
  workerList: ConsoleWorker[];
  /** Load-balanced endpoints report counts only. */
  workersRunning: number;
  workersReady?: number;
  /** Workers failing health checks, or dead on their own (crash-looping) since the last healthy one. */
  workersUnhealthy: number;
  /** The handler's test_input.json, the playground's first body (load-balanced: {method, path, body} JSON). */
  sample?: string;
  /** A chat-completion-compatible queue endpoint (openaiCompatible()): the playground offers its chat form. */
  openaiCompatible?: boolean;
}

/** One request a load-balanced endpoint answered (lb-proxy.ts LbRequest). */
export interface LbRequest {
  at: number;
  method: string;
  path: string;
  status: number;
  ms: number;
}

/** One time bucket of an endpoint's metrics; percentiles are null when no job finished in it. */
export interface MetricsBucket {
  /** Bucket start, ms since epoch. */
  t: number;
  requests: number;
  completed: number;
  failed: number;
  cancelled: number;
  delayP50: number | null;
  delayP95: number | null;
  executionP50: number | null;
  executionP95: number | null;
  /** Load-balanced endpoints: answers by HTTP status (their latency is in execution*). */
  statusCodes?: Record<string, number>;
}

export interface ConsoleMetrics {
  bucketMs: number;
  windowMs: number;
  /** Buckets by endpoint id, oldest first; empty buckets are left out. */
  series: Record<string, MetricsBucket[]>;
}

export interface RetentionSettings {
  runMs: number;
  syncMs: number;
}

export interface ConsoleSettings {
  retention: RetentionSettings;
  /** Jobs the server keeps in the console's window (the newest). */
  jobWindow: number;
}

/** The first event of /console/api/events, and GET /console/api/snapshot. */
export interface ConsoleSnapshot {
  serverTime: number;
  endpoints: ConsoleEndpoint[];
  /** The newest jobs, newest first. */
  jobs: ConsoleJob[];
  /** Jobs the platform holds now (the snapshot may carry fewer). */
  totalJobs: number;
  metrics: ConsoleMetrics;
  settings: ConsoleSettings;
  /** Each load-balanced endpoint's newest requests, oldest first. */
  requests: Record<string, LbRequest[]>;
}

/** `event: jobs`: jobs that changed since the last event; `skipped` changed too but were left out. */
export interface JobsDelta {
  jobs: ConsoleJob[];
  skipped: number;
  totalJobs: number;
  /** Jobs the platform forgot (their retention ended): the page drops them too. */
  removed: string[];
}

/** `event: requests`: requests load-balanced endpoints answered since the last event. */
export interface RequestsDelta {
  requests: { endpointId: string; request: LbRequest }[];
}

/** `event: metrics`: buckets that changed. */
export interface MetricsDelta {
  buckets: { endpointId: string; bucket: MetricsBucket }[];
}

export type LogLevelName = "trace" | "debug" | "info" | "warn" | "error";

export interface LogLine {
  seq: number;
  time: number;
  level: LogLevelName;
  /** The logger's subject: a worker id for a worker's own output, else a component such as "platform". */
  subject?: string;
  /** The worker a platform line is about (`Worker:<id> | ...`). */
  workerId?: string;
  jobId?: string;
  message: string;
}

/** `event: lines` of /console/api/logs/events (the first one is the backlog). */
export interface LogDelta {
  lines: LogLine[];
  skipped: number;
}

export interface EventToken {
  token: string;
  expiresAt: number;
}
