// The one job engine: runs a handler on one job (plain, promised or streamed) and shapes its result.
import { createLogger, flushLog, type Logger } from "../log/index.js";
import { stackText } from "../log/stack.js";
import type { JobSpan } from "../trace/index.js";
import { describeHandlerError, encodeHandlerError, errorMessage, truthy } from "./errors.js";
import { findUnsafeJson } from "./json-safe.js";
import { runInJobScope } from "./scope.js";
import type { HandlerFn, Job, JobResult, RawJob, WorkerIdentity } from "./types.js";

export interface ExecuteOptions {
  worker: WorkerIdentity;
  log: Logger;
  /** Aborting it ends the job at once; its reason is handed back in the outcome. */
  signal: AbortSignal;
  /** Generators: the final output lists every chunk instead of `[]` (return_aggregate_stream). */
  returnAggregateStream: boolean;
  /** Every result gets `stopPod: true` (refresh_worker). */
  refreshWorker: boolean;
  /** Called with each chunk a generator yields, awaited before the next one is pulled. */
  stream?: (chunk: unknown) => Promise<void>;
  progress?: (value: unknown) => void;
  /** The caller reports a failure itself (the one-shot test): no "Captured Handler Exception" lines. */
  quiet?: boolean;
  /** The job's span when tracing: the handler runs in a child span of it. */
  span?: JobSpan;
}

export type JobOutcome =
  | { kind: "result"; result: JobResult; isStream: boolean; handlerMs: number }
  | { kind: "aborted"; reason: unknown; handlerMs: number };

type AnyIterator = Iterator<unknown, unknown, undefined> | AsyncIterator<unknown, unknown, undefined>;

const ABORTED = Symbol("aborted");

/** Resolves with the promise's value, or with ABORTED as soon as the signal fires. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

/** Generators are detected by what the handler returns, so wrapped or bound generator functions stream too. */
function asStream(value: unknown): AnyIterator | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const tag = Object.prototype.toString.call(value);
  if (tag === "[object Generator]" || tag === "[object AsyncGenerator]") return value as AnyIterator;
  return undefined;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Shapes a plain handler's return value exactly as runpod-python's run_job (docs/protocol.md §4.2). */
export function shapeResult(value: unknown): JobResult {
  if (!isPlainObject(value)) return { output: value === undefined ? null : value };
  // Most results carry neither key: the object is the output as it is, without a copy made per job.
  if (!Object.hasOwn(value, "error") && !Object.hasOwn(value, "refresh_worker")) {
    return Object.keys(value).length > 0 ? { output: value } : {};
  }
  const { error, refresh_worker, ...output } = value;
  const result: JobResult = {};
  if (Object.keys(output).length > 0) result.output = output;
  if (truthy(error)) result.error = error;
  if (truthy(refresh_worker)) result.stopPod = true;
  return result;
}

/** A result that cannot be sent as JSON becomes an error naming the bad value's path. */
function checkJson(result: JobResult, worker: WorkerIdentity, log: Logger): JobResult {
  const problem = findUnsafeJson(result.output, "output") ?? findUnsafeJson(result.error, "error");
  if (!problem) return result;
  return errorResult(new TypeError(`Handler result cannot be sent as JSON: ${problem}`), worker, log);
}

function errorResult(err: unknown, worker: WorkerIdentity, log: Logger): JobResult {
  const info = describeHandlerError(err, worker);
  log.error("Captured Handler Exception");
  log.error(JSON.stringify(info, null, 4));
  return { error: encodeHandlerError(info) };
}

/** Chunk errors keep runpod-python's plain-string form: `handler: <message> \ntraceback: <stack>` (docs/protocol.md §4.3). */
function streamErrorResult(err: unknown, log: Logger): JobResult {
  const stack = stackText(err, errorMessage(err));
  log.error(`Generator handler raised: ${errorMessage(err)}`);
  return { error: `handler: ${errorMessage(err)} \ntraceback: ${stack}` };
}

/**
 * The one job engine every mode uses: runs the handler (plain, async, generator or async generator),
 * shapes the result, catches errors, measures time and honours the abort signal. The handler runs in
 * the job's scope, so download() and upload() know their job; the job's files folder goes when it ends.
 */
export function executeJob(handler: HandlerFn, raw: RawJob, options: ExecuteOptions): Promise<JobOutcome> {
  return runInJobScope(raw, options.signal, options.log, () =>
    options.span
      ? options.span.handler(() => runHandler(handler, raw, options))
      : runHandler(handler, raw, options),
  );
}

async function runHandler(handler: HandlerFn, raw: RawJob, options: ExecuteOptions): Promise<JobOutcome> {
  const { log, signal, worker } = options;
  // Where failures are logged; the job's own lines still go to log.
  const failLog = options.quiet ? createLogger({ level: "SILENT", json: false }) : log;
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  const job: Job = {
    ...raw,
    id: raw.id,
    input: raw.input,
    signal,
    log,
    progress: (value: unknown) => options.progress?.(value),
  };

  let returned: unknown;
  try {
    flushLog(); // the lines before it, "Started." among them, must not wait behind a handler that blocks
    const value = handler(job);
    const settled = isThenable(value) ? await untilAborted(Promise.resolve(value), signal) : value;
    if (settled === ABORTED) return { kind: "aborted", reason: signal.reason, handlerMs: elapsed() };
    returned = settled;
  } catch (err) {
    if (signal.aborted) return { kind: "aborted", reason: signal.reason, handlerMs: elapsed() };
    return finish(errorResult(err, worker, failLog), false);
  }

  const stream = asStream(returned);
  if (!stream) return finish(checkJson(shapeResult(returned), worker, failLog), false);
  return runStream(stream);

  function finish(result: JobResult, isStream: boolean): JobOutcome {
    if (options.refreshWorker) result.stopPod = true;
    return { kind: "result", result, isStream, handlerMs: elapsed() };
  }

  async function runStream(iterator: AnyIterator): Promise<JobOutcome> {
    const chunks: unknown[] = [];
    let index = 0;
    const close = () => {
      Promise.resolve()
        .then(() => iterator.return?.())
        .catch(() => undefined);
    };
    for (;;) {
      let step: IteratorResult<unknown, unknown> | typeof ABORTED;
      try {
        flushLog();
        const next = iterator.next();
        step = isThenable(next) ? await untilAborted(Promise.resolve(next), signal) : next;
      } catch (err) {
        if (signal.aborted) return { kind: "aborted", reason: signal.reason, handlerMs: elapsed() };
        return finish(streamErrorResult(err, failLog), true);
      }
      if (step === ABORTED) {
        close();
        return { kind: "aborted", reason: signal.reason, handlerMs: elapsed() };
      }
      if (step.done) break;
      const chunk = step.value;
      if (isPlainObject(chunk) && truthy(chunk.error)) {
        close();
        const message = typeof chunk.error === "string" ? chunk.error : JSON.stringify(chunk.error);
        return finish({ error: message }, true);
      }
      const problem = findUnsafeJson(chunk, `stream chunk ${index}`);
      if (problem) {
        close();
        return finish(
          errorResult(new TypeError(`Stream chunk cannot be sent as JSON: ${problem}`), worker, failLog),
          true,
        );
      }
      if (options.returnAggregateStream) chunks.push(chunk);
      if (options.stream) {
        try {
          await options.stream(chunk);
        } catch (err) {
          close();
          return finish(
            { error: `Stream chunk ${index} could not be delivered: ${errorMessage(err)}` },
            true,
          );
        }
      }
      index++;
      if (signal.aborted) {
        close();
        return { kind: "aborted", reason: signal.reason, handlerMs: elapsed() };
      }
    }
    log.info("Finished running generator.");
    return finish({ output: chunks }, true);
  }
}
