// The public entry `flash-worker/gpu`: the CUDA driver API from a handler, the host's GPU facts, and SAXPY as an example kernel.
export {
  Cuda,
  CudaContext,
  type CudaDevice,
  type DeviceBuffer,
  type Dim3,
  type Kernel,
  pointerParam,
} from "./cuda.js";
// What the binding throws; the worker's own GPU check (GPU_CHECK_FAILED) is reported by the runtime, not caught.
export { CudaError, NoGpuError, NvmlError } from "./errors.js";
export { type GpuFacts, gpuFacts } from "./facts.js";
export type { DevicePointer, Handle } from "./library.js";
export type { GpuInfo, GpuInventory } from "./nvml.js";
export { runSaxpy, SAXPY_PTX, type SaxpyResult } from "./saxpy.js";
