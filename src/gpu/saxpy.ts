// SAXPY (y = a·x + y) as PTX text, run on the GPU and checked against the CPU: a real kernel, no toolchain.
import type { CudaContext } from "./cuda.js";
import { pointerParam } from "./cuda.js";

/**
 * PTX ISA 7.0 (CUDA 11.0 and newer drivers) for sm_52: the driver JIT-compiles it for whatever GPU it
 * meets, and caches the result (the first load costs ~100 ms, later ones well under 1 ms).
 */
export const SAXPY_PTX = `.version 7.0
.target sm_52
.address_size 64

.visible .entry saxpy(
  .param .u64 saxpy_x,
  .param .u64 saxpy_y,
  .param .f32 saxpy_a,
  .param .u32 saxpy_n
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<8>;

  ld.param.u64 %rd1, [saxpy_x];
  ld.param.u64 %rd2, [saxpy_y];
  ld.param.f32 %f1, [saxpy_a];
  ld.param.u32 %r1, [saxpy_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f2, [%rd6];
  ld.global.f32 %f3, [%rd7];
  fma.rn.f32 %f4, %f1, %f2, %f3;
  st.global.f32 [%rd7], %f4;
DONE:
  ret;
}
`;

const BLOCK = 256;

export interface SaxpyResult {
  n: number;
  a: number;
  /** Elements where the GPU's y differs from the CPU's. */
  mismatches: number;
  /** First differing index, for the error message. */
  firstMismatch?: { index: number; gpu: number; cpu: number };
  /** Module load (JIT or its cache), copies in, one launch and its synchronize, copy out: ms each. */
  timings: { moduleMs: number; uploadMs: number; kernelMs: number; downloadMs: number };
  /** The kernel's memory traffic (x read, y read and written) over its time, GB/s. */
  gbPerSecond: number;
}

/**
 * Inputs whose products and sums are exact in float32 (halves and quarters of small integers), so the
 * GPU's fused multiply-add and the CPU's arithmetic must agree bit for bit.
 */
export function saxpyInputs(n: number): { x: Float32Array; y: Float32Array } {
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    x[i] = (i % 1000) * 0.5;
    y[i] = (i % 777) * 0.25;
  }
  return { x, y };
}

/** Milliseconds since the last call (or since it was made), for the phase timings of the GPU checks. */
export function stopwatch(now: () => number): () => number {
  let t = now();
  return () => {
    const at = now();
    const ms = at - t;
    t = at;
    return ms;
  };
}

/** Runs SAXPY on n floats in the given context and compares every element with the CPU's answer. */
export function runSaxpy(
  context: CudaContext,
  n: number,
  a = 2.5,
  now: () => number = () => performance.now(),
): SaxpyResult {
  const { x, y } = saxpyInputs(n);
  const bytes = n * 4;
  const lap = stopwatch(now);
  const kernel = context.kernel(SAXPY_PTX, "saxpy");
  const moduleMs = lap();
  const dx = context.alloc(bytes);
  const dy = context.alloc(bytes);
  context.upload(dx, x);
  context.upload(dy, y);
  const uploadMs = lap();
  context.launch(kernel, { x: Math.ceil(n / BLOCK) }, { x: BLOCK }, [
    pointerParam(dx),
    pointerParam(dy),
    new Float32Array([a]),
    new Uint32Array([n]),
  ]);
  context.synchronize();
  const kernelMs = lap();
  const out = new Float32Array(n);
  context.download(dy, out);
  const downloadMs = lap();
  context.free(dx);
  context.free(dy);

  const fa = Math.fround(a);
  let mismatches = 0;
  let firstMismatch: SaxpyResult["firstMismatch"];
  for (let i = 0; i < n; i++) {
    const cpu = Math.fround(fa * x[i]! + y[i]!);
    if (out[i] !== cpu) {
      if (mismatches === 0) firstMismatch = { index: i, gpu: out[i]!, cpu };
      mismatches++;
    }
  }
  const result: SaxpyResult = {
    n,
    a,
    mismatches,
    timings: { moduleMs, uploadMs, kernelMs, downloadMs },
    gbPerSecond: kernelMs > 0 ? (3 * bytes) / (kernelMs / 1000) / 1e9 : 0,
  };
  if (firstMismatch) result.firstMismatch = firstMismatch;
  return result;
}
