// The queue worker's start-up phases (fitness checks, warm-up), each timed, all bounded by RUNPOD_INIT_TIMEOUT.
import type { Logger } from "../log/index.js";

/** One phase of start-up; `run` resolves false when it failed (it has then logged and reported why). */
export interface StartPhase {
  name: string;
  run(): Promise<boolean>;
}

export interface ColdStartOptions {
  phases: readonly StartPhase[];
  /** RUNPOD_INIT_TIMEOUT in ms, counted from the process start (performance.now()'s origin). */
  initTimeoutMs: number;
  /** When the app's module had been imported, ms since the process start. */
  importedAt: number;
  log: Logger;
  /** The platform client's best-effort unhealthy report. */
  reportUnhealthy(check: string, reason: string, timeoutMs: number): Promise<void>;
  /** Bound on the unhealthy report, as for a failed fitness check. */
  reportTimeoutMs: number;
}

/** The check name an init-timeout report carries. */
export const INIT_TIMEOUT_CHECK = "init_timeout";

/** Each start-up phase's time, `import 12 ms`, in order; the worker's start line lists them. */
export type StartTimes = string[];

/**
 * Runs the phases in order; undefined when one failed or RUNPOD_INIT_TIMEOUT passed first (then reported
 * unhealthy; the worker must exit 1). On success, each phase's time, for `logStarted` once the worker is ready.
 */
export async function coldStart(options: ColdStartOptions): Promise<StartTimes | undefined> {
  const { log } = options;
  const times: StartTimes = [`import ${Math.round(options.importedAt)} ms`];
  let current = "import";
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<"expired">((resolve) => {
    timer = setTimeout(() => resolve("expired"), Math.max(0, options.initTimeoutMs - performance.now()));
  });
  const phases = (async () => {
    for (const phase of options.phases) {
      current = phase.name;
      const started = performance.now();
      if (!(await phase.run())) return false;
      times.push(`${phase.name} ${Math.round(performance.now() - started)} ms`);
    }
    return true;
  })();
  const outcome = await Promise.race([phases, expired]);
  clearTimeout(timer);
  if (outcome === "expired") {
    const limit = `${options.initTimeoutMs / 1000} s`;
    const reason = `start-up exceeded RUNPOD_INIT_TIMEOUT (${limit}) during ${current}`;
    log.error(
      `Worker start-up took longer than RUNPOD_INIT_TIMEOUT (${limit}); still in ${current} after ${Math.round(performance.now())} ms. Make start-up faster or raise RUNPOD_INIT_TIMEOUT (seconds).`,
    );
    await options.reportUnhealthy(INIT_TIMEOUT_CHECK, reason, options.reportTimeoutMs);
    log.error("Worker is unhealthy, exiting.");
    return undefined;
  }
  return outcome ? times : undefined;
}

/** The start line, logged when the worker is about to take its first job: its cold start, a model's load included. */
export function logStarted(log: Logger, times: StartTimes): void {
  log.info(`Worker started in ${Math.round(performance.now())} ms | ${times.join(", ")}`);
}

/** The check name a failed warm-up's unhealthy report carries. */
export const WARM_UP_CHECK = "warm_up";

/** Runs the warm-up hooks in order; a throw is logged and reported unhealthy, and the result is false. */
export async function runWarmUp(
  hooks: readonly (() => void | Promise<void>)[],
  options: Pick<ColdStartOptions, "log" | "reportUnhealthy" | "reportTimeoutMs">,
): Promise<boolean> {
  const { log } = options;
  try {
    for (const hook of hooks) await hook();
    return true;
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    log.error(`Warm-up failed: ${error.stack ?? `${error.name}: ${error.message}`}`);
    await options.reportUnhealthy(WARM_UP_CHECK, `${error.name}: ${error.message}`, options.reportTimeoutMs);
    log.error("Worker is unhealthy, exiting.");
    return false;
  }
}
