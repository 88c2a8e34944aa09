// flash-worker/testing: run a handler in a unit test, with no platform and no network.
import type { HandlerDefinition } from "../job/definition.js";
import { executeJob } from "../job/execute.js";
import type { JobResult, RawJob } from "../job/types.js";
import { createLogger, type LogLevel } from "../log/index.js";
import { registry } from "../runtime/registry.js";

// Importing this module means the test drives handlers itself: handler() must not start a runtime.
registry().managed = true;

export interface RunJobOptions {
  /** Job id; default "test_job". */
  id?: string;
  /** Extra raw job fields, as the platform would send them. */
  fields?: Record<string, unknown>;
  /** Abort to simulate a cancel, timeout or shutdown. */
  signal?: AbortSignal;
  /** Log level for the handler's job.log; default SILENT. */
  logLevel?: LogLevel;
}

export interface RunJobResult {
  /** The body the worker would post to job-done, shaped exactly as in production. */
  result?: JobResult;
  /** True when the handler streamed (a generator). */
  isStream: boolean;
  /** Every chunk the handler yielded, in order. */
  chunks: unknown[];
  /** Every progress value the handler sent, in order. */
  progress: unknown[];
  /** Set when the signal ended the job before it finished; holds the abort reason. */
  aborted?: unknown;
  handlerMs: number;
}

/** Runs one job through the same engine the worker uses and returns what it would report. */
export async function runJob<I, O>(
  definition: HandlerDefinition<I, O>,
  input: I,
  options: RunJobOptions = {},
): Promise<RunJobResult> {
  const chunks: unknown[] = [];
  const progress: unknown[] = [];
  const job: RawJob = { ...options.fields, id: options.id ?? "test_job", input };
  const log = createLogger({ level: options.logLevel ?? "SILENT", json: false }).child({ requestId: job.id });
  const def = definition as unknown as HandlerDefinition;
  const outcome = await executeJob(def.fn, job, {
    worker: { workerId: "test-worker", hostname: "localhost" },
    log,
    signal: options.signal ?? new AbortController().signal,
    returnAggregateStream: def.returnAggregateStream,
    refreshWorker: def.refreshWorker,
    stream: async (chunk) => {
      chunks.push(chunk);
    },
    progress: (value) => progress.push(value),
  });
  if (outcome.kind === "aborted") {
    return { isStream: false, chunks, progress, aborted: outcome.reason, handlerMs: outcome.handlerMs };
  }
  return {
    result: outcome.result,
    isStream: outcome.isStream,
    chunks,
    progress,
    handlerMs: outcome.handlerMs,
  };
}
