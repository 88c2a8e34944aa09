// flash-worker/testing: run a handler in a unit test, with no platform and no network.

import { registry } from "../app/registry.js";
import { withRemoteFunctions } from "../app/remote.js";
import { ArgumentError, FlashError } from "../flash-error.js";
import type { HandlerDefinition } from "../job/definition.js";
import { executeJob } from "../job/execute.js";
import { jobLogBindings } from "../job/scope.js";
import type { JobResult, RawJob } from "../job/types.js";
import { createLogger, type LogLevel } from "../log/index.js";
import { deserializeArg, serializeArg } from "../payload/base64.js";
import type { FunctionRequest, FunctionResponse } from "../payload/types.js";

// JobResult: the shape of RunJobResult.result, so a test can name it.
export type { JobResult } from "../job/types.js";
export { bytearray, frozenset, isPyFloat, PyFloat, pythonTypeName, tuple } from "../payload/values.js";

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

/**
 * Runs one job through the same engine and dispatch the worker uses and returns what it would report:
 * with functions registered by remote(), a FunctionRequest input goes to them, as in the worker.
 */
export async function runJob<I, O>(
  definition: HandlerDefinition<I, O>,
  input: I,
  options: RunJobOptions = {},
): Promise<RunJobResult> {
  const chunks: unknown[] = [];
  const progress: unknown[] = [];
  const job: RawJob = { ...options.fields, id: options.id ?? "test_job", input };
  const log = createLogger({ level: options.logLevel ?? "SILENT", json: false }).child(jobLogBindings(job));
  const own = definition as unknown as HandlerDefinition;
  const def = registry().remotes.size > 0 ? withRemoteFunctions(own) : own;
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

export interface RemoteCallResult {
  /** The FunctionResponse's success. */
  success: boolean;
  /** The return value as Python receives it, decoded exactly: a whole float is a PyFloat, a tuple isTuple(). */
  value?: unknown;
  /** The error Python's toolkit raises with, when success is false. */
  error?: string;
  /** What the function wrote to stdout and stderr during the call. */
  stdout: string;
  /** The FunctionResponse as the worker sends it. */
  response: FunctionResponse;
}

/** A remote call's job that ended without the FunctionResponse every remote call answers with. */
class RemoteCallError extends FlashError {
  readonly code = "REMOTE_CALL_FAILED";
  override name = "RemoteCallError";
}

/**
 * Calls a function registered with remote() as Python's toolkit does: each argument is pickled (use
 * PyFloat, tuple(), bytearray() … for Python types), the job runs through runJob, and the result is decoded.
 */
export async function callRemote(
  name: string,
  args: readonly unknown[] = [],
  kwargs: Readonly<Record<string, unknown>> = {},
  options: RunJobOptions = {},
): Promise<RemoteCallResult> {
  if (!registry().remotes.has(name))
    throw new ArgumentError(
      `callRemote("${name}"): no function is registered under that name; import the file that calls remote("${name}", fn)`,
    );
  const request: FunctionRequest = {
    function_name: name,
    args: args.map((a) => serializeArg(a)),
    kwargs: Object.fromEntries(Object.entries(kwargs).map(([k, v]) => [k, serializeArg(v)])),
  };
  const app = registry().app;
  const base = app?.kind === "handler" ? app : withRemoteFunctions(undefined);
  const run = await runJob(base, request, options);
  const response = run.result?.output as FunctionResponse | undefined;
  if (response === undefined || typeof response !== "object")
    throw new RemoteCallError(
      `callRemote("${name}"): the job ended without a FunctionResponse: ${JSON.stringify(run.result ?? run.aborted)}`,
    );
  const error = run.result?.error;
  return {
    success: response.success,
    // The result's shape: `value` only when the function returned one, `error` only when it failed.
    ...(response.result !== null ? { value: deserializeArg(response.result) } : {}),
    ...(error !== undefined ? { error: String(error) } : {}),
    stdout: response.stdout ?? "",
    response: { ...response, error: error === undefined ? response.error : String(error) },
  };
}
