// A small CUDA driver-API surface over CudaLibrary: devices, a context, device memory, PTX modules, launches.
import { isFlashError } from "../flash-error.js";
import { CudaError, NoGpuError } from "./errors.js";
import { driverPresent, loadCuda } from "./ffi.js";
import type { CudaLibrary, DevicePointer, Handle } from "./library.js";
import { cString, cudaVersionText } from "./nvml.js";

const CUDA_SUCCESS = 0;
const COMPUTE_CAPABILITY_MAJOR = 75;
const COMPUTE_CAPABILITY_MINOR = 76;

/** What a handler is told when it asks for CUDA on a host without an NVIDIA GPU. */
export const NO_CUDA_MESSAGE =
  "CUDA is not available on this host: no NVIDIA driver (libcuda.so.1) was found. Run it on a GPU worker (an endpoint with a GPU, from the flash-worker:cuda image).";

/** A block of device memory. */
export interface DeviceBuffer {
  readonly pointer: DevicePointer;
  readonly bytes: number;
}

/** A kernel in a loaded module. */
export interface Kernel {
  readonly name: string;
  readonly handle: Handle;
}

export interface Dim3 {
  x: number;
  y?: number;
  z?: number;
}

/** A kernel parameter holding a device pointer (a CUdeviceptr is 64 bits). */
export function pointerParam(buffer: DeviceBuffer): BigUint64Array {
  return new BigUint64Array([BigInt(buffer.pointer)]);
}

/** The device's primary context, current on this thread while the callback runs. */
export class CudaContext {
  private readonly allocations = new Set<DeviceBuffer>();
  private readonly modules = new Set<Handle>();

  constructor(
    private readonly lib: CudaLibrary,
    readonly device: number,
  ) {}

  private call(name: string, code: number): void {
    if (code !== CUDA_SUCCESS) throw new CudaError(name, code);
  }

  alloc(bytes: number): DeviceBuffer {
    const out: [DevicePointer] = [0];
    this.call("cuMemAlloc_v2", this.lib.cuMemAlloc_v2(out, bytes));
    const buffer = { pointer: out[0], bytes };
    this.allocations.add(buffer);
    return buffer;
  }

  free(buffer: DeviceBuffer): void {
    if (!this.allocations.delete(buffer)) return;
    this.call("cuMemFree_v2", this.lib.cuMemFree_v2(buffer.pointer));
  }

  fill(buffer: DeviceBuffer, byte: number): void {
    this.call("cuMemsetD8_v2", this.lib.cuMemsetD8_v2(buffer.pointer, byte, buffer.bytes));
  }

  upload(buffer: DeviceBuffer, data: ArrayBufferView): void {
    const bytes = Math.min(buffer.bytes, data.byteLength);
    this.call("cuMemcpyHtoD_v2", this.lib.cuMemcpyHtoD_v2(buffer.pointer, data, bytes));
  }

  download(buffer: DeviceBuffer, into: ArrayBufferView): void {
    const bytes = Math.min(buffer.bytes, into.byteLength);
    this.call("cuMemcpyDtoH_v2", this.lib.cuMemcpyDtoH_v2(into, buffer.pointer, bytes));
  }

  /** Loads PTX text (the driver JIT-compiles it for this GPU) and returns the named kernel. */
  kernel(ptx: string, name: string): Kernel {
    const module: [Handle] = [0];
    this.call("cuModuleLoadData", this.lib.cuModuleLoadData(module, ptx));
    this.modules.add(module[0]);
    const fn: [Handle] = [0];
    this.call("cuModuleGetFunction", this.lib.cuModuleGetFunction(fn, module[0], name));
    return { name, handle: fn[0] };
  }

  /** Launches on the default stream; params holds one typed array per kernel parameter. */
  launch(kernel: Kernel, grid: Dim3, block: Dim3, params: ArrayBufferView[]): void {
    const code = this.lib.cuLaunchKernel(
      kernel.handle,
      grid.x,
      grid.y ?? 1,
      grid.z ?? 1,
      block.x,
      block.y ?? 1,
      block.z ?? 1,
      0,
      null,
      params,
      null,
    );
    this.call(`cuLaunchKernel(${kernel.name})`, code);
  }

  synchronize(): void {
    this.call("cuCtxSynchronize", this.lib.cuCtxSynchronize());
  }

  /** Frees what the callback left allocated and unloads its modules. */
  release(): void {
    for (const buffer of this.allocations) this.lib.cuMemFree_v2(buffer.pointer);
    this.allocations.clear();
    for (const module of this.modules) this.lib.cuModuleUnload(module);
    this.modules.clear();
  }
}

export interface CudaDevice {
  ordinal: number;
  name: string;
  /** e.g. "9.0". */
  computeCapability: string;
}

/** The CUDA driver API, initialised. */
export class Cuda {
  constructor(private readonly lib: CudaLibrary) {
    this.call("cuInit", lib.cuInit(0));
  }

  /** Binds libcuda.so.1 and initialises it; on a host without an NVIDIA driver, a NoGpuError naming CUDA. */
  static async open(env: Record<string, string | undefined> = process.env): Promise<Cuda> {
    if (!driverPresent(env)) throw new NoGpuError(NO_CUDA_MESSAGE);
    let lib: CudaLibrary;
    try {
      lib = await loadCuda(env);
    } catch (err) {
      if (isFlashError(err, "GPU_DRIVER_NOT_FOUND"))
        throw new NoGpuError(`${NO_CUDA_MESSAGE} (${err.message})`);
      throw err;
    }
    return new Cuda(lib);
  }

  private call(name: string, code: number): void {
    if (code !== CUDA_SUCCESS) throw new CudaError(name, code);
  }

  /** The newest CUDA the driver supports, e.g. "13.0". */
  driverVersion(): string {
    const out: [number] = [0];
    this.call("cuDriverGetVersion", this.lib.cuDriverGetVersion(out));
    return cudaVersionText(out[0]);
  }

  deviceCount(): number {
    const out: [number] = [0];
    this.call("cuDeviceGetCount", this.lib.cuDeviceGetCount(out));
    return out[0];
  }

  device(ordinal: number): CudaDevice {
    const handle: [number] = [0];
    this.call("cuDeviceGet", this.lib.cuDeviceGet(handle, ordinal));
    const name = new Uint8Array(256);
    this.call("cuDeviceGetName", this.lib.cuDeviceGetName(name, name.length, handle[0]));
    const major: [number] = [0];
    const minor: [number] = [0];
    this.call(
      "cuDeviceGetAttribute",
      this.lib.cuDeviceGetAttribute(major, COMPUTE_CAPABILITY_MAJOR, handle[0]),
    );
    this.call(
      "cuDeviceGetAttribute",
      this.lib.cuDeviceGetAttribute(minor, COMPUTE_CAPABILITY_MINOR, handle[0]),
    );
    return { ordinal, name: cString(name), computeCapability: `${major[0]}.${minor[0]}` };
  }

  private readonly contexts = new Map<number, Handle>();

  /**
   * Runs the callback with the device's primary context current; its memory and modules are released after.
   * The context itself is kept (creating one costs 100 ms or more) until close().
   */
  withContext<T>(ordinal: number, use: (context: CudaContext) => T): T {
    const device: [number] = [0];
    this.call("cuDeviceGet", this.lib.cuDeviceGet(device, ordinal));
    let handle = this.contexts.get(device[0]);
    if (handle === undefined) {
      const context: [Handle] = [0];
      this.call("cuDevicePrimaryCtxRetain", this.lib.cuDevicePrimaryCtxRetain(context, device[0]));
      handle = context[0];
      this.contexts.set(device[0], handle);
    }
    const cuda = new CudaContext(this.lib, device[0]);
    try {
      this.call("cuCtxSetCurrent", this.lib.cuCtxSetCurrent(handle));
      return use(cuda);
    } finally {
      cuda.release();
    }
  }

  /** Releases the primary contexts this object retained. */
  close(): void {
    this.lib.cuCtxSetCurrent(null);
    for (const device of this.contexts.keys()) this.lib.cuDevicePrimaryCtxRelease_v2(device);
    this.contexts.clear();
  }
}
