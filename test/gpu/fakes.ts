// JS fakes of the NVML and CUDA driver libraries (the GPU is what cannot exist here): device memory is a
// Map of byte arrays and the "saxpy" kernel runs in JS; every call can be made to fail or misbehave.
import type {
  CudaLibrary,
  DevicePointer,
  Handle,
  NvmlLibrary,
  NvmlMemory,
  Out,
} from "../../src/gpu/library.js";

function write(buffer: Uint8Array, text: string): void {
  const bytes = new TextEncoder().encode(text);
  buffer.set(bytes.subarray(0, buffer.length - 1));
  buffer[Math.min(bytes.length, buffer.length - 1)] = 0;
}

export interface FakeNvmlOptions {
  names?: string[];
  /** Return codes by call name. */
  fail?: Partial<Record<keyof NvmlLibrary, number>>;
  cudaVersion?: number;
}

export function fakeNvml(options: FakeNvmlOptions = {}): NvmlLibrary & { shutdowns: number } {
  const names = options.names ?? ["NVIDIA H200"];
  const fail = (call: keyof NvmlLibrary) => options.fail?.[call] ?? 0;
  const lib = {
    shutdowns: 0,
    nvmlInit_v2: () => fail("nvmlInit_v2"),
    nvmlShutdown: () => {
      lib.shutdowns++;
      return 0;
    },
    nvmlSystemGetDriverVersion: (out: Uint8Array) => {
      write(out, "580.159.04");
      return fail("nvmlSystemGetDriverVersion");
    },
    nvmlSystemGetCudaDriverVersion_v2: (out: Out<number>) => {
      out[0] = options.cudaVersion ?? 13000;
      return fail("nvmlSystemGetCudaDriverVersion_v2");
    },
    nvmlDeviceGetCount_v2: (out: Out<number>) => {
      out[0] = names.length;
      return fail("nvmlDeviceGetCount_v2");
    },
    nvmlDeviceGetHandleByIndex_v2: (index: number, out: Out<Handle>) => {
      out[0] = BigInt(index + 1);
      return fail("nvmlDeviceGetHandleByIndex_v2");
    },
    nvmlDeviceGetName: (device: Handle, out: Uint8Array) => {
      write(out, names[Number(device) - 1]!);
      return fail("nvmlDeviceGetName");
    },
    nvmlDeviceGetUUID: (device: Handle, out: Uint8Array) => {
      write(out, `GPU-${device}`);
      return fail("nvmlDeviceGetUUID");
    },
    nvmlDeviceGetMemoryInfo: (_device: Handle, memory: NvmlMemory) => {
      memory.total = 150_754_820_096n;
      memory.free = 149_000_000_000;
      return fail("nvmlDeviceGetMemoryInfo");
    },
    nvmlDeviceGetTemperature: (_device: Handle, _sensor: number, out: Out<number>) => {
      out[0] = 31;
      return fail("nvmlDeviceGetTemperature");
    },
  };
  return lib;
}

export interface FakeCudaOptions {
  devices?: number;
  fail?: Partial<Record<keyof CudaLibrary, number>>;
  /** The memset writes one wrong byte. */
  corrupt?: boolean;
  /** The kernel computes a·x + y + 1. */
  wrong?: boolean;
  /** Runs after every launch (tests move a fake clock here). */
  onLaunch?: () => void;
}

export function fakeCuda(options: FakeCudaOptions = {}): CudaLibrary & { live: Map<bigint, Uint8Array> } {
  const fail = (call: keyof CudaLibrary) => options.fail?.[call] ?? 0;
  const live = new Map<bigint, Uint8Array>();
  let next = 0x1000n;
  let current: Handle | null = null;
  const memory = (pointer: DevicePointer) => {
    const block = live.get(BigInt(pointer));
    if (!block) throw new Error(`fake CUDA: no allocation at ${pointer}`);
    return block;
  };
  const view = (data: ArrayBufferView) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return {
    live,
    cuInit: () => fail("cuInit"),
    cuDriverGetVersion: (out) => {
      out[0] = 13000;
      return fail("cuDriverGetVersion");
    },
    cuDeviceGetCount: (out) => {
      out[0] = options.devices ?? 1;
      return fail("cuDeviceGetCount");
    },
    cuDeviceGet: (out, ordinal) => {
      out[0] = ordinal;
      return ordinal < (options.devices ?? 1) ? 0 : 101;
    },
    cuDeviceGetName: (out, _length, device) => {
      write(out, `Fake GPU ${device}`);
      return 0;
    },
    cuDeviceGetAttribute: (out, attribute) => {
      out[0] = attribute === 75 ? 9 : 0;
      return 0;
    },
    cuDevicePrimaryCtxRetain: (out, device) => {
      out[0] = BigInt(100 + device);
      return fail("cuDevicePrimaryCtxRetain");
    },
    cuDevicePrimaryCtxRelease_v2: () => 0,
    cuCtxSetCurrent: (context) => {
      current = context;
      return 0;
    },
    cuCtxSynchronize: () => (current === null ? 201 : fail("cuCtxSynchronize")),
    cuMemAlloc_v2: (out, bytes) => {
      const code = fail("cuMemAlloc_v2");
      if (code) return code;
      out[0] = next;
      live.set(next, new Uint8Array(bytes));
      next += BigInt(bytes) + 0x1000n;
      return 0;
    },
    cuMemFree_v2: (pointer) => (live.delete(BigInt(pointer)) ? 0 : 1),
    cuMemsetD8_v2: (pointer, value, count) => {
      const block = memory(pointer);
      block.fill(value, 0, count);
      if (options.corrupt) block[count >> 1] = value ^ 0xff;
      return fail("cuMemsetD8_v2");
    },
    cuMemcpyHtoD_v2: (destination, source, bytes) => {
      memory(destination).set(view(source).subarray(0, bytes));
      return fail("cuMemcpyHtoD_v2");
    },
    cuMemcpyDtoH_v2: (destination, source, bytes) => {
      view(destination).set(memory(source).subarray(0, bytes));
      return fail("cuMemcpyDtoH_v2");
    },
    cuModuleLoadData: (out, image) => {
      out[0] = 7n;
      return image.includes(".entry saxpy(") ? fail("cuModuleLoadData") : 218;
    },
    cuModuleUnload: () => 0,
    cuModuleGetFunction: (out, _module, name) => {
      out[0] = 8n;
      return name === "saxpy" ? 0 : 500;
    },
    cuLaunchKernel: (_fn, gridX, _gy, _gz, blockX, _by, _bz, _shared, _stream, params) => {
      const code = fail("cuLaunchKernel");
      if (code) return code;
      const [px, py, pa, pn] = params as [BigUint64Array, BigUint64Array, Float32Array, Uint32Array];
      const x = new Float32Array(memory(px[0]!).buffer);
      const y = new Float32Array(memory(py[0]!).buffer);
      const a = pa[0]!;
      const n = Math.min(pn[0]!, gridX * blockX);
      for (let i = 0; i < n; i++) y[i] = Math.fround(a * x[i]! + y[i]!) + (options.wrong ? 1 : 0);
      options.onLaunch?.();
      return 0;
    },
  };
}
