// The GPU module's public face: the host's GPU facts, the CUDA driver API, the health check and SAXPY.
export { type CudaCheckResult, checkCuda, DEFAULT_CUDA_CHECK, type DeviceCheck } from "./check.js";
export {
  Cuda,
  CudaContext,
  type DeviceBuffer,
  type Dim3,
  type Kernel,
  NO_CUDA_MESSAGE,
  pointerParam,
} from "./cuda.js";
export { CudaError, GpuCheckError, NoGpuError, NvmlError } from "./errors.js";
export { type GpuFacts, gpuFacts, gpuSummary, knownGpuFacts, logGpus, readGpuFacts } from "./facts.js";
export { describeGpu, type GpuInfo, type GpuInventory } from "./nvml.js";
export { runSaxpy, SAXPY_PTX, type SaxpyResult } from "./saxpy.js";
