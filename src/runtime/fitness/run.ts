// Runs fitness checks one after another, timing each: the worker stops at the first failure, doctor runs all.
import type { FitnessCheck } from "./registry.js";

export interface CheckResult {
  name: string;
  ok: boolean;
  ms: number;
  /** What a passing check found (e.g. "20.31GB available"). */
  detail?: string;
  /** "<ErrorName>: <message>" of a failing check, as the unhealthy report carries it. */
  error?: string;
  stack?: string;
}

export async function runCheck(check: FitnessCheck): Promise<CheckResult> {
  const started = performance.now();
  try {
    const detail = await check.run();
    const result: CheckResult = { name: check.name, ok: true, ms: performance.now() - started };
    if (typeof detail === "string" && detail.length > 0) result.detail = detail;
    return result;
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    const result: CheckResult = {
      name: check.name,
      ok: false,
      ms: performance.now() - started,
      error: `${error.name}: ${error.message}`,
    };
    if (error.stack) result.stack = error.stack;
    return result;
  }
}

/** Runs the checks in order; with stopAtFailure, none runs after the first that fails. */
export async function runChecks(
  checks: readonly FitnessCheck[],
  options: { stopAtFailure: boolean; onResult?: (result: CheckResult) => void },
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of checks) {
    const result = await runCheck(check);
    results.push(result);
    options.onResult?.(result);
    if (!result.ok && options.stopAtFailure) break;
  }
  return results;
}

/** "0.12ms", "231ms": the check's time as the log shows it. */
export function formatMs(ms: number): string {
  return ms < 10 ? `${ms.toFixed(2)}ms` : `${Math.round(ms)}ms`;
}
