// The GPU test process: binds libcuda.so.1, runs the health check, prints one JSON line. It runs apart
// from the worker so a hung driver call can be killed, and so the worker holds no CUDA context of its own.
import { type CudaCheckOptions, type CudaCheckResult, checkCuda } from "./check.js";
import { loadCuda } from "./ffi.js";

/** The one line the process prints. */
export type ProbeAnswer =
  | { ok: true; result: CudaCheckResult }
  | { ok: false; error: { name: string; message: string } };

async function main(): Promise<void> {
  let answer: ProbeAnswer;
  try {
    const options = JSON.parse(process.argv[2] ?? "{}") as CudaCheckOptions;
    answer = { ok: true, result: checkCuda(await loadCuda(), options) };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    answer = { ok: false, error: { name: error.name, message: error.message } };
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}

await main();
