// GPU errors named the way NVIDIA's headers name the codes, so a log line can be looked up.
import { FlashError } from "../flash-error.js";

/** nvmlReturn_t names (nvml.h). */
const NVML_ERRORS: Record<number, string> = {
  1: "NVML_ERROR_UNINITIALIZED",
  2: "NVML_ERROR_INVALID_ARGUMENT",
  3: "NVML_ERROR_NOT_SUPPORTED",
  4: "NVML_ERROR_NO_PERMISSION",
  5: "NVML_ERROR_ALREADY_INITIALIZED",
  6: "NVML_ERROR_NOT_FOUND",
  7: "NVML_ERROR_INSUFFICIENT_SIZE",
  8: "NVML_ERROR_INSUFFICIENT_POWER",
  9: "NVML_ERROR_DRIVER_NOT_LOADED",
  10: "NVML_ERROR_TIMEOUT",
  11: "NVML_ERROR_IRQ_ISSUE",
  12: "NVML_ERROR_LIBRARY_NOT_FOUND",
  13: "NVML_ERROR_FUNCTION_NOT_FOUND",
  14: "NVML_ERROR_CORRUPTED_INFOROM",
  15: "NVML_ERROR_GPU_IS_LOST",
  16: "NVML_ERROR_RESET_REQUIRED",
  17: "NVML_ERROR_OPERATING_SYSTEM",
  18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
  19: "NVML_ERROR_IN_USE",
  20: "NVML_ERROR_MEMORY",
  21: "NVML_ERROR_NO_DATA",
  22: "NVML_ERROR_VGPU_ECC_NOT_ENABLED",
  23: "NVML_ERROR_INSUFFICIENT_RESOURCES",
  24: "NVML_ERROR_FREQ_NOT_SUPPORTED",
  25: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
  26: "NVML_ERROR_DEPRECATED",
  27: "NVML_ERROR_NOT_READY",
  999: "NVML_ERROR_UNKNOWN",
};

/** CUresult names (cuda.h) for the failures a health check meets. */
const CUDA_ERRORS: Record<number, string> = {
  1: "CUDA_ERROR_INVALID_VALUE",
  2: "CUDA_ERROR_OUT_OF_MEMORY",
  3: "CUDA_ERROR_NOT_INITIALIZED",
  4: "CUDA_ERROR_DEINITIALIZED",
  34: "CUDA_ERROR_STUB_LIBRARY",
  46: "CUDA_ERROR_DEVICE_UNAVAILABLE",
  100: "CUDA_ERROR_NO_DEVICE",
  101: "CUDA_ERROR_INVALID_DEVICE",
  200: "CUDA_ERROR_INVALID_IMAGE",
  201: "CUDA_ERROR_INVALID_CONTEXT",
  209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
  214: "CUDA_ERROR_ECC_UNCORRECTABLE",
  218: "CUDA_ERROR_INVALID_PTX",
  221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
  222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
  300: "CUDA_ERROR_INVALID_SOURCE",
  400: "CUDA_ERROR_INVALID_HANDLE",
  500: "CUDA_ERROR_NOT_FOUND",
  700: "CUDA_ERROR_ILLEGAL_ADDRESS",
  701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
  702: "CUDA_ERROR_LAUNCH_TIMEOUT",
  719: "CUDA_ERROR_LAUNCH_FAILED",
  801: "CUDA_ERROR_NOT_SUPPORTED",
  802: "CUDA_ERROR_SYSTEM_NOT_READY",
  803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
  804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
  999: "CUDA_ERROR_UNKNOWN",
};

export function nvmlErrorName(code: number): string {
  return NVML_ERRORS[code] ?? `NVML error ${code}`;
}

export function cudaErrorName(code: number): string {
  return CUDA_ERRORS[code] ?? `CUDA error ${code}`;
}

/** An NVML call that did not return NVML_SUCCESS. */
export class NvmlError extends FlashError {
  readonly code = "NVML_FAILED";
  override name = "NvmlError";
  constructor(
    readonly call: string,
    /** The call's return status (an NVML_* or CUDA_* value). */
    readonly status: number,
  ) {
    super(`${call} failed: ${nvmlErrorName(status)} (${status})`);
  }
}

/** A CUDA driver call that did not return CUDA_SUCCESS. */
export class CudaError extends FlashError {
  readonly code = "CUDA_FAILED";
  override name = "CudaError";
  constructor(
    readonly call: string,
    /** The call's return status (an NVML_* or CUDA_* value). */
    readonly status: number,
  ) {
    super(`${call} failed: ${cudaErrorName(status)} (${status})`);
  }
}

/** The GPU ran, but not correctly or not in time: a readback or result mismatch, a benchmark too slow. */
export class GpuCheckError extends FlashError {
  readonly code = "GPU_CHECK_FAILED";
  override name = "GpuCheckError";
}

/** No NVIDIA driver on this host: CUDA work cannot run here. */
export class NoGpuError extends FlashError {
  readonly code = "NO_GPU";
  override name = "NoGpuError";
}
