// The NVML and CUDA driver calls this package makes, C-shaped (return code, outputs in one-element arrays),
// so the logic above them runs unchanged against koffi's bindings or a test's fake.

/** An opaque handle (nvmlDevice_t, CUcontext, CUmodule, CUfunction): a pointer, as koffi 3 returns it. */
export type Handle = bigint | number;
/** A CUdeviceptr: a 64-bit device address. */
export type DevicePointer = bigint | number;
/** One-element array the call writes its output into. */
export type Out<T> = [T];

/** nvmlMemory_t. */
export interface NvmlMemory {
  total?: number | bigint;
  free?: number | bigint;
  used?: number | bigint;
}

/** libnvidia-ml.so.1: each call returns an nvmlReturn_t (0 is NVML_SUCCESS). */
export interface NvmlLibrary {
  nvmlInit_v2(): number;
  nvmlShutdown(): number;
  nvmlSystemGetDriverVersion(version: Uint8Array, length: number): number;
  nvmlSystemGetCudaDriverVersion_v2(version: Out<number>): number;
  nvmlDeviceGetCount_v2(count: Out<number>): number;
  nvmlDeviceGetHandleByIndex_v2(index: number, device: Out<Handle>): number;
  nvmlDeviceGetName(device: Handle, name: Uint8Array, length: number): number;
  nvmlDeviceGetUUID(device: Handle, uuid: Uint8Array, length: number): number;
  nvmlDeviceGetMemoryInfo(device: Handle, memory: NvmlMemory): number;
  /** sensor 0 is NVML_TEMPERATURE_GPU. */
  nvmlDeviceGetTemperature(device: Handle, sensor: number, celsius: Out<number>): number;
}

/** libcuda.so.1 (the driver API): each call returns a CUresult (0 is CUDA_SUCCESS). */
export interface CudaLibrary {
  cuInit(flags: number): number;
  cuDriverGetVersion(version: Out<number>): number;
  cuDeviceGetCount(count: Out<number>): number;
  cuDeviceGet(device: Out<number>, ordinal: number): number;
  cuDeviceGetName(name: Uint8Array, length: number, device: number): number;
  cuDeviceGetAttribute(value: Out<number>, attribute: number, device: number): number;
  cuDevicePrimaryCtxRetain(context: Out<Handle>, device: number): number;
  cuDevicePrimaryCtxRelease_v2(device: number): number;
  cuCtxSetCurrent(context: Handle | null): number;
  cuCtxSynchronize(): number;
  cuMemAlloc_v2(pointer: Out<DevicePointer>, bytes: number): number;
  cuMemFree_v2(pointer: DevicePointer): number;
  cuMemsetD8_v2(pointer: DevicePointer, value: number, count: number): number;
  cuMemcpyHtoD_v2(destination: DevicePointer, source: ArrayBufferView, bytes: number): number;
  cuMemcpyDtoH_v2(destination: ArrayBufferView, source: DevicePointer, bytes: number): number;
  /** image: PTX text; the driver JIT-compiles it for the device. */
  cuModuleLoadData(module: Out<Handle>, image: string): number;
  cuModuleUnload(module: Handle): number;
  cuModuleGetFunction(fn: Out<Handle>, module: Handle, name: string): number;
  /** params: one typed array per kernel parameter, holding its value. */
  cuLaunchKernel(
    fn: Handle,
    gridX: number,
    gridY: number,
    gridZ: number,
    blockX: number,
    blockY: number,
    blockZ: number,
    sharedMemBytes: number,
    stream: Handle | null,
    params: ArrayBufferView[],
    extra: null,
  ): number;
}

/** The calls' C prototypes, as koffi parses them. */
export const NVML_PROTOTYPES: Record<keyof NvmlLibrary, string> = {
  nvmlInit_v2: "int nvmlInit_v2()",
  nvmlShutdown: "int nvmlShutdown()",
  nvmlSystemGetDriverVersion: "int nvmlSystemGetDriverVersion(_Out_ uint8_t *version, unsigned int length)",
  nvmlSystemGetCudaDriverVersion_v2: "int nvmlSystemGetCudaDriverVersion_v2(_Out_ int *version)",
  nvmlDeviceGetCount_v2: "int nvmlDeviceGetCount_v2(_Out_ unsigned int *count)",
  nvmlDeviceGetHandleByIndex_v2: "int nvmlDeviceGetHandleByIndex_v2(unsigned int index, _Out_ void **device)",
  nvmlDeviceGetName: "int nvmlDeviceGetName(void *device, _Out_ uint8_t *name, unsigned int length)",
  nvmlDeviceGetUUID: "int nvmlDeviceGetUUID(void *device, _Out_ uint8_t *uuid, unsigned int length)",
  nvmlDeviceGetMemoryInfo: "int nvmlDeviceGetMemoryInfo(void *device, _Out_ nvmlMemory_t *memory)",
  nvmlDeviceGetTemperature:
    "int nvmlDeviceGetTemperature(void *device, int sensor, _Out_ unsigned int *temperature)",
};

export const CUDA_PROTOTYPES: Record<keyof CudaLibrary, string> = {
  cuInit: "int cuInit(unsigned int flags)",
  cuDriverGetVersion: "int cuDriverGetVersion(_Out_ int *version)",
  cuDeviceGetCount: "int cuDeviceGetCount(_Out_ int *count)",
  cuDeviceGet: "int cuDeviceGet(_Out_ int *device, int ordinal)",
  cuDeviceGetName: "int cuDeviceGetName(_Out_ uint8_t *name, int length, int device)",
  cuDeviceGetAttribute: "int cuDeviceGetAttribute(_Out_ int *value, int attribute, int device)",
  cuDevicePrimaryCtxRetain: "int cuDevicePrimaryCtxRetain(_Out_ void **context, int device)",
  cuDevicePrimaryCtxRelease_v2: "int cuDevicePrimaryCtxRelease_v2(int device)",
  cuCtxSetCurrent: "int cuCtxSetCurrent(void *context)",
  cuCtxSynchronize: "int cuCtxSynchronize()",
  cuMemAlloc_v2: "int cuMemAlloc_v2(_Out_ uint64_t *pointer, size_t bytes)",
  cuMemFree_v2: "int cuMemFree_v2(uint64_t pointer)",
  cuMemsetD8_v2: "int cuMemsetD8_v2(uint64_t pointer, uint8_t value, size_t count)",
  cuMemcpyHtoD_v2: "int cuMemcpyHtoD_v2(uint64_t destination, const void *source, size_t bytes)",
  cuMemcpyDtoH_v2: "int cuMemcpyDtoH_v2(_Out_ void *destination, uint64_t source, size_t bytes)",
  cuModuleLoadData: "int cuModuleLoadData(_Out_ void **module, const char *image)",
  cuModuleUnload: "int cuModuleUnload(void *module)",
  cuModuleGetFunction: "int cuModuleGetFunction(_Out_ void **fn, void *module, const char *name)",
  cuLaunchKernel:
    "int cuLaunchKernel(void *fn, unsigned int gridX, unsigned int gridY, unsigned int gridZ, unsigned int blockX, unsigned int blockY, unsigned int blockZ, unsigned int sharedMemBytes, void *stream, void **params, void **extra)",
};
