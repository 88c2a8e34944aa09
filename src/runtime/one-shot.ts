// The one-shot local test: the test job from --test_input or test_input.json (beside the handler first), run once, printed.
import type { EndpointHandlerDefinition } from "../app/endpoint.js";
import { FlashError, isFlashError } from "../flash-error.js";
import type { HandlerDefinition } from "../job/definition.js";
import type { HandlerErrorInfo } from "../job/errors.js";
import { executeJob } from "../job/execute.js";
import { jobLogBindings } from "../job/scope.js";
import type { RawJob } from "../job/types.js";
import type { Logger } from "../log/index.js";
import { userStack } from "../log/stack.js";
import { ENDPOINT_DEFAULTS } from "../platform/state/endpoint.js";
import { type JobSpan, tracing } from "../trace/index.js";
import { runWarmUp } from "./cold-start.js";
import type { WorkerConfig } from "./config/options.js";
import { readTestInput } from "./config/test-input.js";
import { fitResult } from "./queue/large-output.js";

/** The test job, checked: an object with "input", from the source `readTestInput` found. */
export interface TestJob {
  job: Record<string, unknown>;
  source: string;
}

/**
 * Reads and checks the test job before anything starts (a model server's load can take minutes): --test_input,
 * else test_input.json beside the handler file, else ./test_input.json. Undefined, with the reason logged, when
 * there is none or it is not a queue job.
 */
export function prepareTestJob(config: WorkerConfig, log: Logger): TestJob | undefined {
  const read = readTestInput(config);
  if (typeof read === "string") {
    log.error(read);
    return undefined;
  }
  if ("missing" in read) {
    log.warn("test_input.json not found, exiting.");
    log.warn(`Looked for ${read.missing.join(" and ")}; pass the job with --test-input '{"input": {...}}'.`);
    return undefined;
  }
  const { parsed, source } = read;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    log.error(`Test input from ${source} must be a JSON object like {"input": {...}}.`);
    return undefined;
  }
  const job = parsed as Record<string, unknown>;
  if (job.input === undefined || job.input === null) {
    if ("requests" in job || "path" in job) {
      log.error(
        `Test input from ${source}: this is a queue endpoint: its test input is a job {"input": {...}}, not a load-balanced endpoint's HTTP requests.`,
      );
      return undefined;
    }
    const given = JSON.stringify(job);
    const wrapped = given.length > 200 ? '{"input": {...}}' : `{"input": ${given}}`;
    log.error(
      `Job has no input parameter. Unable to run. The test input from ${source} must put the handler's input under "input": ${wrapped}`,
    );
    return undefined;
  }
  log.info(`Test input: ${source}`);
  return { job, source };
}

/** The platform's execution timeout when the Endpoint sets none: how long the one-shot test waits by default. */
const DEFAULT_TIMEOUT_MS = ENDPOINT_DEFAULTS.executionTimeoutMs;

/** The job's own wait ended without an answer: the handler's promise can never settle, or took too long. */
class Unfinished extends FlashError {
  readonly code = "JOB_UNFINISHED";
}

/**
 * The one-shot local test (docs/protocol.md §6.1): run one job, exit 0 or 1. Logs go to `log`; the result body
 * alone goes to `print` (stdout), so `flash run handler.ts | jq` works.
 */
export async function runOneShot(
  definition: HandlerDefinition,
  config: WorkerConfig,
  log: Logger,
  print: (text: string) => void,
  { job }: TestJob,
): Promise<number> {
  // The warm-up runs here too, so the test job sees the worker as the platform would (docs/protocol.md §10.2).
  const warmStart = performance.now();
  // A hand-written definition ({kind: "handler", fn}) has no startHooks.
  const hooks = definition.startHooks ?? [];
  const warm = await runWarmUp(hooks, {
    log,
    reportUnhealthy: async () => {},
    reportTimeoutMs: 0,
  });
  if (!warm) return 1;
  if (hooks.length > 0) log.info(`Warm-up done. (${Math.round(performance.now() - warmStart)} ms)`);
  const raw: RawJob = { ...job, id: typeof job.id === "string" ? job.id : "local_test", input: job.input };
  const jobLog = log.child(jobLogBindings(raw));
  const timeoutMs =
    config.timeoutMs ??
    ((definition as Partial<EndpointHandlerDefinition>).endpoint?.executionTimeoutMs || DEFAULT_TIMEOUT_MS);
  const stop = new AbortController();
  // Not a reason to stay alive: a handler waiting on nothing still lets the event loop drain.
  const timer = setTimeout(
    () =>
      stop.abort(
        new Unfinished(
          `Job ${raw.id} timed out after ${timeoutMs / 1000} s: the handler had not finished. Pass --timeout <seconds> to wait longer (default: the Endpoint's executionTimeoutMs, else ${DEFAULT_TIMEOUT_MS / 1000} s).`,
        ),
      ),
    timeoutMs,
  ).unref();
  // The event loop drained while the job waits: nothing is left that could ever settle the handler's promise.
  const drained = () =>
    stop.abort(
      new Unfinished(
        `Job ${raw.id} never finished: the handler's promise never settled, and nothing is left that could settle it (no timer, socket or pending I/O). Make every path of the handler return, resolve or reject.`,
      ),
    );
  process.once("beforeExit", drained);
  jobLog.info("Started.");
  const execute = (span?: JobSpan) =>
    executeJob(definition.fn, raw, {
      span,
      worker: { workerId: config.platform.workerId, hostname: config.platform.hostname },
      log: jobLog,
      signal: stop.signal,
      // The result body is the one the platform would get; the chunks are shown as they come.
      returnAggregateStream: definition.returnAggregateStream,
      refreshWorker: definition.refreshWorker,
      progress: (value) => jobLog.info(`Progress: ${JSON.stringify(value)}`),
      stream: async (chunk) => jobLog.info(`Stream chunk: ${JSON.stringify(chunk)}`),
      // Reported once, below, with the user's own frames.
      quiet: true,
    });
  // Tracing on: the test job gets its span as a queue job does.
  const traced = tracing;
  const outcome = traced
    ? await traced.job(raw, { workerId: config.platform.workerId }, async (span) => {
        const ran = await execute(span);
        span.end(ran.kind === "result" && ran.result.error === undefined ? "COMPLETED" : "FAILED");
        return ran;
      })
    : await execute();
  clearTimeout(timer);
  process.off("beforeExit", drained);
  if (outcome.kind !== "result") {
    const reason = outcome.reason;
    log.error(
      isFlashError(reason, "JOB_UNFINISHED")
        ? reason.message
        : `Job ${raw.id} was stopped: ${String(reason)}`,
    );
    return 1;
  }
  // Sized as the queue worker sizes it, so the body printed is the one the platform would get (§11.2).
  const { result, json } = await fitResult(raw, outcome.result, {
    offload: definition.offloadOutput ?? false,
    signal: stop.signal,
    log: jobLog,
  });
  if (result.error !== undefined) {
    log.error(`Job ${raw.id} failed with error: ${describeFailure(result.error)}`);
    return 1;
  }
  log.info(`Job ${raw.id} completed successfully. (${Math.round(outcome.handlerMs)} ms)`);
  print(`${json}\n`);
  log.info("Local testing complete, exiting.");
  return 0;
}

/** A failed result's error as the user reads it: the error's stack through their own frames, else the error itself. */
function describeFailure(error: unknown): string {
  if (typeof error !== "string") return JSON.stringify(error);
  try {
    const info = JSON.parse(error) as Partial<HandlerErrorInfo>;
    if (typeof info.error_traceback === "string") return userStack(info.error_traceback);
  } catch {
    // A plain string error (returned `{error: "..."}`, or a generator's): shown as it is.
  }
  return userStack(error);
}
