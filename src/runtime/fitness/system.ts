// The built-in checks, named as runpod-python names them (the names reach the platform in the unhealthy
// report): memory, disk, network, and on GPU hosts the CUDA version and the GPU health check.

import { statfsSync } from "node:fs";
import { connect } from "node:net";
import { freemem, totalmem } from "node:os";
import { FlashError } from "../../flash-error.js";
import type { GpuFacts } from "../../gpu/facts.js";
import type { FitnessConfig } from "../config/options.js";
import type { FitnessCheck } from "./registry.js";

const GIB = 1024 ** 3;

/** A number as Python's str(float) prints it: 4 → "4.0", 10.5 → "10.5". */
function pyFloat(value: number): string {
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

/** A built-in check failed; the message is worded as runpod-python words it (it reaches the platform). */
export class FitnessError extends FlashError {
  readonly code = "FITNESS_CHECK_FAILED";
  override name = "FitnessCheckError";
}

export function memoryCheck(config: FitnessConfig, read = { free: freemem, total: totalmem }): FitnessCheck {
  return {
    name: "_memory_check",
    run() {
      // os.freemem() is MemAvailable on Linux: what psutil's virtual_memory().available reads.
      const available = read.free() / GIB;
      const total = read.total() / GIB;
      if (available < config.minMemoryGb) {
        throw new FitnessError(
          `Insufficient memory: ${available.toFixed(2)}GB available, ${pyFloat(config.minMemoryGb)}GB required`,
        );
      }
      return `${available.toFixed(2)}GB available (of ${total.toFixed(2)}GB total)`;
    },
  };
}

export interface DiskUsage {
  totalBytes: number;
  freeBytes: number;
}

function rootDisk(): DiskUsage {
  const stats = statfsSync("/");
  // shutil.disk_usage: free is what an unprivileged user may still write (f_bavail).
  return { totalBytes: stats.blocks * stats.bsize, freeBytes: stats.bavail * stats.bsize };
}

export function diskCheck(config: FitnessConfig, read: () => DiskUsage = rootDisk): FitnessCheck {
  return {
    name: "_disk_check",
    run() {
      const { totalBytes, freeBytes } = read();
      const free = freeBytes / GIB;
      const percent = totalBytes > 0 ? (100 * freeBytes) / totalBytes : 0;
      if (percent < config.minDiskPercent) {
        throw new FitnessError(
          `Insufficient disk space: ${free.toFixed(2)}GB free (${percent.toFixed(1)}%), ${pyFloat(config.minDiskPercent)}% required`,
        );
      }
      return `${free.toFixed(2)}GB free (${percent.toFixed(1)}% available)`;
    },
  };
}

export function networkCheck(config: FitnessConfig): FitnessCheck {
  const { networkHost: host, networkPort: port, networkTimeoutMs } = config;
  return {
    name: "_network_check",
    run: () =>
      new Promise<string>((resolve, reject) => {
        const started = performance.now();
        const socket = connect({ host, port });
        const timer = setTimeout(() => {
          socket.destroy();
          reject(
            new FitnessError(
              `Network connectivity failed: Timeout connecting to ${host}:${port} (${networkTimeoutMs / 1000}s)`,
            ),
          );
        }, networkTimeoutMs);
        socket.once("connect", () => {
          clearTimeout(timer);
          socket.destroy();
          resolve(`Connected to ${host}:${port} (${Math.round(performance.now() - started)}ms)`);
        });
        socket.once("error", (err: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          reject(
            new FitnessError(
              err.code === "ECONNREFUSED"
                ? `Network connectivity failed: Connection refused to ${host}:${port}`
                : `Network connectivity check failed: ${err.message}`,
            ),
          );
        });
      }),
  };
}

function parseVersion(text: string): [number, number] {
  const match = /(\d+)\.(\d+)/.exec(text);
  return match ? [Number(match[1]), Number(match[2])] : [0, 0];
}

/** The driver's CUDA version (NVML) against RUNPOD_MIN_CUDA_VERSION. */
export function cudaVersionCheck(config: FitnessConfig, cudaVersion: string): FitnessCheck {
  return {
    name: "_cuda_version_check",
    run() {
      const found = parseVersion(cudaVersion);
      const min = parseVersion(config.minCudaVersion);
      if (found[0] < min[0] || (found[0] === min[0] && found[1] < min[1])) {
        throw new FitnessError(
          `CUDA version too old: ${found[0]}.${found[1]} found, ${min[0]}.${min[1]} required`,
        );
      }
      return `CUDA ${found[0]}.${found[1]} (minimum: ${min[0]}.${min[1]})`;
    },
  };
}

export interface GpuHealthOptions {
  config: FitnessConfig;
  facts: GpuFacts;
  /** Runs the GPU test process; replaced in tests. */
  probe?: typeof import("../../gpu/probe-runner.js").runGpuProbe;
}

/** Every GPU: found, a context, memory written and read back, SAXPY checked against the CPU. */
export function gpuHealthCheck(options: GpuHealthOptions): FitnessCheck {
  const { config, facts } = options;
  return {
    name: "_gpu_health_check",
    async run() {
      if (facts.state === "error") throw new FitnessError(`GPU health check failed: NVML: ${facts.error}`);
      const { DEFAULT_CUDA_CHECK } = await import("../../gpu/check.js");
      const probe = options.probe ?? (await import("../../gpu/probe-runner.js")).runGpuProbe;
      const result = await probe({
        check: { ...DEFAULT_CUDA_CHECK, benchmarkTimeoutMs: config.gpuBenchmarkTimeoutMs },
        timeoutMs: config.gpuTestTimeoutMs,
      });
      const expected = facts.state === "ok" ? facts.inventory.gpus.length : result.devices.length;
      if (result.devices.length < expected) {
        throw new FitnessError(
          `GPU health check failed: NVML lists ${expected} GPU(s), CUDA initialised ${result.devices.length}`,
        );
      }
      const each = result.devices.map(
        (d) =>
          `GPU ${d.ordinal} ${d.name}: context ${Math.round(d.contextMs)}ms, alloc+readback ${Math.round(d.allocMs)}ms, SAXPY ${d.saxpy.n} floats ${d.computeMs.toFixed(1)}ms (kernel ${d.saxpy.kernelMs.toFixed(3)}ms, ${d.saxpy.gbPerSecond.toFixed(0)} GB/s)`,
      );
      return `${result.devices.length} GPU(s) healthy (CUDA ${result.cudaVersion}); ${each.join("; ")}`;
    },
  };
}

/** The built-in checks for this host, in the order they run. */
export function builtinChecks(
  config: FitnessConfig,
  facts: GpuFacts,
  options: Pick<GpuHealthOptions, "probe"> = {},
): FitnessCheck[] {
  const checks: FitnessCheck[] = [];
  if (!config.skipSystem) {
    checks.push(memoryCheck(config), diskCheck(config), networkCheck(config));
    if (facts.state === "ok") checks.push(cudaVersionCheck(config, facts.inventory.cudaVersion));
  }
  if (!config.skipGpu && facts.state !== "none") checks.push(gpuHealthCheck({ config, facts, ...options }));
  return checks;
}
