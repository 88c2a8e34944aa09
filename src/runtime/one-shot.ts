// The one-shot local test: the test job from --test_input or test_input.json, run once, printed.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Config } from "../config/index.js";
import type { HandlerDefinition } from "../job/definition.js";
import { executeJob } from "../job/execute.js";
import type { RawJob } from "../job/types.js";
import type { Logger } from "../log/index.js";

/** Reads the test job: --test_input, else ./test_input.json, else test_input.json beside the handler file. */
function readTestJob(config: Config, log: Logger): { job?: Record<string, unknown>; source?: string } {
  let text: string | undefined;
  let source: string | undefined;
  if (config.testInput !== undefined) {
    text = config.testInput;
    source = "--test_input";
  } else {
    const candidates = [resolve("test_input.json")];
    const beside = config.file ? join(dirname(resolve(config.file)), "test_input.json") : undefined;
    if (beside && beside !== candidates[0]) candidates.push(beside);
    source = candidates.find((path) => existsSync(path));
    if (!source) {
      log.warn("test_input.json not found, exiting.");
      log.warn(`Looked for ${candidates.join(" and ")}; pass the job with --test-input '{"input": {...}}'.`);
      return {};
    }
    text = readFileSync(source, "utf8");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    log.error(
      `Test input from ${source} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
    return {};
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    log.error(`Test input from ${source} must be a JSON object like {"input": {...}}.`);
    return {};
  }
  return { job: parsed as Record<string, unknown>, source };
}

/** The one-shot local test (docs/protocol.md §6.1): run one job, print the result, exit 0 or 1. */
export async function runOneShot(
  definition: HandlerDefinition,
  config: Config,
  log: Logger,
): Promise<number> {
  const { job } = readTestJob(config, log);
  if (!job) return 1;
  if (job.input === undefined || job.input === null) {
    log.error("Job has no input parameter. Unable to run.");
    return 1;
  }
  const raw: RawJob = { ...job, id: typeof job.id === "string" ? job.id : "local_test", input: job.input };
  const jobLog = log.child({ requestId: raw.id });
  jobLog.info("Started.");
  const outcome = await executeJob(definition.fn, raw, {
    worker: { workerId: config.platform.workerId, hostname: config.platform.hostname },
    log: jobLog,
    signal: new AbortController().signal,
    // The result body is the one the platform would get; the chunks are shown as they come.
    returnAggregateStream: definition.returnAggregateStream,
    refreshWorker: definition.refreshWorker,
    progress: (value) => jobLog.info(`Progress: ${JSON.stringify(value)}`),
    stream: async (chunk) => jobLog.info(`Stream chunk: ${JSON.stringify(chunk)}`),
  });
  if (outcome.kind !== "result") return 1;
  const { result } = outcome;
  if (result.error !== undefined) {
    log.error(
      `Job ${raw.id} failed with error: ${typeof result.error === "string" ? result.error : JSON.stringify(result.error)}`,
    );
    return 1;
  }
  log.info(`Job ${raw.id} completed successfully. (${Math.round(outcome.handlerMs)} ms)`);
  log.info(`Job result: ${JSON.stringify(result)}`);
  log.info("Local testing complete, exiting.");
  return 0;
}
