// The shapes of the job engine: raw and handed-out jobs, handler functions, results, the worker's identity.
import type { Logger } from "../log/index.js";

/** A job exactly as the platform's job-take returned it: `id`, `input` and any other fields. */
export interface RawJob {
  id: string;
  input: unknown;
  [field: string]: unknown;
}

/** What a handler receives: the raw job fields plus the runtime's helpers. */
export interface Job<I = unknown> {
  readonly id: string;
  readonly input: I;
  /** Aborted when the platform stops the job (cancel, timeout) or the worker shuts down. */
  readonly signal: AbortSignal;
  /** Sends an IN_PROGRESS update visible in /status while the job runs; sent in order, never after the result. */
  progress(value: unknown): void;
  /** A logger whose lines carry this job's id (and `[batchId=…]` when the job has one). */
  readonly log: Logger;
  /** The batch the job belongs to, when the platform sent one (RunPod's batch jobs, beta). */
  readonly batchId?: string;
  /** Every other field the platform sent (e.g. `webhook`). */
  readonly [field: string]: unknown;
}

/** A value a handler may produce: plain, promised, or a stream of chunks. */
export type HandlerReturn<O> =
  | O
  | Promise<O>
  | Generator<unknown, unknown, undefined>
  | AsyncGenerator<unknown, unknown, undefined>;

export type HandlerFn<I = unknown, O = unknown> = (job: Job<I>) => HandlerReturn<O>;

/** The body posted to job-done (docs/protocol.md §4.2–§4.4). */
export interface JobResult {
  output?: unknown;
  error?: unknown;
  stopPod?: true;
}

export interface WorkerIdentity {
  workerId: string;
  hostname: string;
}
