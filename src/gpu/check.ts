// The GPU health check: every CUDA device gets a context, a memory allocation written and read back,
// and a SAXPY kernel checked against the CPU within the benchmark time.
import { Cuda } from "./cuda.js";
import { GpuCheckError } from "./errors.js";
import type { CudaLibrary } from "./library.js";
import { runSaxpy, stopwatch } from "./saxpy.js";

export interface CudaCheckOptions {
  /** Bytes allocated, filled and read back on each GPU. */
  allocBytes: number;
  /** SAXPY length, in floats. */
  saxpyLength: number;
  /** The compute run (module load, launch, synchronize) must finish within this (RUNPOD_GPU_BENCHMARK_TIMEOUT). */
  benchmarkTimeoutMs: number;
  now?: () => number;
}

export const DEFAULT_CUDA_CHECK: CudaCheckOptions = {
  allocBytes: 64 * 1024 * 1024,
  saxpyLength: 1 << 20,
  benchmarkTimeoutMs: 2000,
};

export interface DeviceCheck {
  ordinal: number;
  name: string;
  computeCapability: string;
  /** Context, allocation + fill + readback + free, SAXPY (module load to synchronize): ms each. */
  contextMs: number;
  allocMs: number;
  computeMs: number;
  saxpy: { n: number; mismatches: number; kernelMs: number; gbPerSecond: number };
}

export interface CudaCheckResult {
  /** The newest CUDA the driver supports, e.g. "13.0". */
  cudaVersion: string;
  devices: DeviceCheck[];
}

const PATTERN = 0xa5;

/** Runs the check on every device; the first failure throws, naming the GPU. */
export function checkCuda(lib: CudaLibrary, options: CudaCheckOptions = DEFAULT_CUDA_CHECK): CudaCheckResult {
  const now = options.now ?? (() => performance.now());
  const cuda = new Cuda(lib);
  try {
    const cudaVersion = cuda.driverVersion();
    const count = cuda.deviceCount();
    if (count === 0) throw new GpuCheckError("No CUDA devices found (cuDeviceGetCount returned 0)");
    const devices: DeviceCheck[] = [];
    for (let ordinal = 0; ordinal < count; ordinal++) {
      const device = cuda.device(ordinal);
      const label = `GPU ${ordinal} (${device.name})`;
      try {
        devices.push(checkDevice(cuda, ordinal, options, now, device));
      } catch (err) {
        if (err instanceof Error) err.message = `${label}: ${err.message}`;
        throw err;
      }
    }
    return { cudaVersion, devices };
  } finally {
    cuda.close();
  }
}

function checkDevice(
  cuda: Cuda,
  ordinal: number,
  options: CudaCheckOptions,
  now: () => number,
  device: { name: string; computeCapability: string },
): DeviceCheck {
  const lap = stopwatch(now);
  return cuda.withContext(ordinal, (context) => {
    const contextMs = lap();
    const buffer = context.alloc(options.allocBytes);
    context.fill(buffer, PATTERN);
    const back = new Uint8Array(options.allocBytes);
    context.download(buffer, back);
    context.free(buffer);
    // memcmp against the pattern; the index is looked for only when something differs.
    const wrong = Buffer.from(back.buffer).equals(Buffer.alloc(back.length, PATTERN))
      ? -1
      : back.findIndex((byte) => byte !== PATTERN);
    if (wrong >= 0) {
      throw new GpuCheckError(
        `memory readback mismatch: byte ${wrong} of ${options.allocBytes} is 0x${back[wrong]!.toString(16)}, wrote 0x${PATTERN.toString(16)}`,
      );
    }
    const allocMs = lap();
    const saxpy = runSaxpy(context, options.saxpyLength, 2.5, now);
    const computeMs = saxpy.timings.moduleMs + saxpy.timings.uploadMs + saxpy.timings.kernelMs;
    lap();
    if (saxpy.mismatches > 0) {
      const first = saxpy.firstMismatch!;
      throw new GpuCheckError(
        `SAXPY result mismatch: ${saxpy.mismatches} of ${saxpy.n} elements differ from the CPU (first at ${first.index}: GPU ${first.gpu}, CPU ${first.cpu})`,
      );
    }
    if (computeMs > options.benchmarkTimeoutMs) {
      throw new GpuCheckError(
        `GPU compute too slow: SAXPY took ${Math.round(computeMs)}ms (max: ${options.benchmarkTimeoutMs}ms)`,
      );
    }
    return {
      ordinal,
      name: device.name,
      computeCapability: device.computeCapability,
      contextMs,
      allocMs,
      computeMs,
      saxpy: {
        n: saxpy.n,
        mismatches: saxpy.mismatches,
        kernelMs: saxpy.timings.kernelMs,
        gbPerSecond: saxpy.gbPerSecond,
      },
    };
  });
}
