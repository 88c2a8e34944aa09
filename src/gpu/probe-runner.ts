// Runs the GPU test process with a deadline (RUNPOD_GPU_TEST_TIMEOUT): a driver call that hangs is
// killed with its process, and the worker hears a timeout instead of hanging with it.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FlashError } from "../flash-error.js";
import type { CudaCheckOptions, CudaCheckResult } from "./check.js";
import { GpuCheckError } from "./errors.js";
import type { ProbeAnswer } from "./probe.js";

export interface ProbeOptions {
  check: CudaCheckOptions;
  /** The whole test's deadline. */
  timeoutMs: number;
  env?: Record<string, string | undefined>;
  /** The command to run, with the options JSON appended; the bundled probe by default. */
  command?: string[];
}

/** `node probe.js`, or the source through tsx when running from src (tests). */
export function probeCommand(): string[] {
  const source = import.meta.url.endsWith(".ts");
  const entry = fileURLToPath(new URL(`./probe${source ? ".ts" : ".js"}`, import.meta.url));
  return source
    ? [process.execPath, "--import", import.meta.resolve("tsx"), entry]
    : [process.execPath, entry];
}

/** An error carried back from the test process, with its own name (CudaError, GpuCheckError, ...). */
export class ProbeError extends FlashError {
  readonly code = "GPU_PROBE_FAILED";
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

export function runGpuProbe(options: ProbeOptions): Promise<CudaCheckResult> {
  const [file, ...args] = options.command ?? probeCommand();
  const seconds = options.timeoutMs / 1000;
  return new Promise((resolve, reject) => {
    const child = spawn(file!, [...args, JSON.stringify(options.check)], {
      env: options.env ?? process.env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr = (stderr + chunk).slice(-2000);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, options.timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new GpuCheckError(`GPU test could not start: ${err.message}`));
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return reject(new GpuCheckError(`GPU test timed out after ${seconds}s`));
      const line = stdout.trim().split("\n").pop() ?? "";
      let answer: ProbeAnswer | undefined;
      try {
        answer = JSON.parse(line) as ProbeAnswer;
      } catch {
        answer = undefined;
      }
      if (answer?.ok === true) return resolve(answer.result);
      if (answer?.ok === false) return reject(new ProbeError(answer.error.name, answer.error.message));
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const detail = stderr.trim().split("\n").slice(-3).join(" | ");
      reject(new GpuCheckError(`GPU test process ${how} without a result${detail ? `: ${detail}` : ""}`));
    });
  });
}
