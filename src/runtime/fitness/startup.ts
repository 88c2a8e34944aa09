// The queue worker's startup fitness checks (docs/protocol.md §10): built-in, then registered, before the
// heartbeat and the first take; the first failure is reported to the platform and the worker exits 1.

import type { GpuFacts } from "../../gpu/facts.js";
import type { Logger } from "../../log/index.js";
import type { FitnessConfig } from "../config/options.js";
import { registeredChecks } from "./registry.js";
import { formatMs, runChecks } from "./run.js";
import { builtinChecks, type GpuHealthOptions } from "./system.js";

/** runpod-python bounds the unhealthy report so it can only delay the exit this long (§3.8). */
export const UNHEALTHY_REPORT_TIMEOUT_MS = 2000;

export interface StartupChecksOptions {
  config: FitnessConfig;
  facts: GpuFacts;
  log: Logger;
  /** The platform client's best-effort unhealthy report. */
  reportUnhealthy(check: string, reason: string, timeoutMs: number): Promise<void>;
  probe?: GpuHealthOptions["probe"];
}

/** Runs the checks; false when one failed (it is then logged and reported, and the worker must exit 1). */
export async function runStartupChecks(options: StartupChecksOptions): Promise<boolean> {
  const { config, log } = options;
  if (config.skipAll) {
    log.info("Fitness checks disabled via RUNPOD_SKIP_FITNESS_CHECKS, skipping.");
    return true;
  }
  const checks = [...builtinChecks(config, options.facts, { probe: options.probe }), ...registeredChecks()];
  if (checks.length === 0) return true;
  log.info(`Running ${checks.length} fitness check(s)...`);
  const started = performance.now();
  const results = await runChecks(checks, {
    stopAtFailure: true,
    onResult: (result) => {
      if (result.ok) {
        log.info(
          `Fitness check passed: ${result.name} (${formatMs(result.ms)})${result.detail ? ` | ${result.detail}` : ""}`,
        );
      }
    },
  });
  const failed = results.find((result) => !result.ok);
  if (!failed) {
    log.info(`All fitness checks passed. (${formatMs(performance.now() - started)})`);
    return true;
  }
  const reason = failed.error ?? "failed";
  log.error(`Fitness check failed: ${failed.name} | ${reason}`);
  if (failed.stack) log.debug(`Traceback:\n${failed.stack}`);
  await options.reportUnhealthy(failed.name, reason, UNHEALTHY_REPORT_TIMEOUT_MS);
  log.error("Worker is unhealthy, exiting.");
  return false;
}
