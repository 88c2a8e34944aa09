// Real work on the GPU from TypeScript: SAXPY (y = a·x + y) as PTX, which the NVIDIA driver JIT-compiles,
// launched through the CUDA driver API and checked element by element against the CPU, with timings.
import { handler, type Job } from "flash-worker";
import { Cuda, runSaxpy } from "flash-worker/gpu";

interface SaxpyInput {
  /** Vector length in floats (default 16 Mi). */
  n?: number;
  a?: number;
  /** Runs on the same data; the first includes the driver's JIT compile, later ones hit its cache. */
  runs?: number;
  /** GPU ordinal. */
  device?: number;
}

const MAX_N = 256 * 1024 * 1024;

function wholeNumber(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
    throw new Error(
      `input.${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`,
    );
  return value;
}

// Opened once per worker: CUDA's context (100 ms or more to create) is kept between jobs.
let opened: Promise<Cuda> | undefined;

function cuda(): Promise<Cuda> {
  opened ??= Cuda.open().catch((err: unknown) => {
    opened = undefined;
    throw err;
  });
  return opened;
}

export default handler(async (job: Job<SaxpyInput>) => {
  const input = job.input ?? {};
  const n = wholeNumber(input.n, "n", 1, MAX_N, 16 * 1024 * 1024);
  const runs = wholeNumber(input.runs, "runs", 1, 20, 3);
  const ordinal = wholeNumber(input.device, "device", 0, 63, 0);
  if (input.a !== undefined && (typeof input.a !== "number" || !Number.isFinite(input.a)))
    throw new Error(`input.a must be a finite number, got ${JSON.stringify(input.a)}`);
  const a = input.a ?? 2.5;

  const gpu = await cuda();
  const count = gpu.deviceCount();
  if (ordinal >= count) throw new Error(`input.device is ${ordinal}, but this worker has ${count} GPU(s)`);
  const device = gpu.device(ordinal);
  const results = gpu.withContext(ordinal, (context) =>
    Array.from({ length: runs }, () => runSaxpy(context, n, a)),
  );
  const wrong = results.find((r) => r.mismatches > 0);
  if (wrong?.firstMismatch) {
    const { index, gpu: got, cpu } = wrong.firstMismatch;
    throw new Error(
      `GPU result differs from the CPU in ${wrong.mismatches} of ${n} elements (first at ${index}: ${got} vs ${cpu})`,
    );
  }
  const round = (ms: number) => Math.round(ms * 1000) / 1000;
  return {
    gpu: device.name,
    compute_capability: device.computeCapability,
    cuda: gpu.driverVersion(),
    n,
    a,
    checked_against_cpu: true,
    mismatches: 0,
    runs: results.map((r) => ({
      module_ms: round(r.timings.moduleMs),
      upload_ms: round(r.timings.uploadMs),
      kernel_ms: round(r.timings.kernelMs),
      download_ms: round(r.timings.downloadMs),
      gb_per_s: Math.round(r.gbPerSecond),
    })),
  };
});
