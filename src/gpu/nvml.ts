// The GPU inventory from NVML: each GPU's name, memory and temperature, the driver and its CUDA version.
import { NvmlError } from "./errors.js";
import type { Handle, NvmlLibrary } from "./library.js";

/** One GPU as NVML sees it. */
export interface GpuInfo {
  index: number;
  name: string;
  uuid: string;
  memoryTotalBytes: number;
  memoryFreeBytes: number;
  /** Core temperature in °C; absent where the board does not report it. */
  temperatureC?: number;
}

/** The host's GPUs and driver. */
export interface GpuInventory {
  /** e.g. "580.159.04". */
  driverVersion: string;
  /** The newest CUDA the driver supports, "major.minor" (13000 → "13.0"). */
  cudaVersion: string;
  gpus: GpuInfo[];
}

const NVML_SUCCESS = 0;
const NVML_ERROR_NOT_SUPPORTED = 3;
/** NVML's documented buffer sizes (NVML_DEVICE_NAME_V2_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE, ...). */
const NAME_BUFFER = 96;
const UUID_BUFFER = 96;
const VERSION_BUFFER = 80;

function check(call: string, code: number): void {
  if (code !== NVML_SUCCESS) throw new NvmlError(call, code);
}

/** A NUL-terminated C string out of a buffer the library wrote. */
export function cString(buffer: Uint8Array): string {
  const end = buffer.indexOf(0);
  return new TextDecoder().decode(end >= 0 ? buffer.subarray(0, end) : buffer);
}

/** 13000 → "13.0", 12080 → "12.8" (CUDA's version encoding: 1000 * major + 10 * minor). */
export function cudaVersionText(encoded: number): string {
  return `${Math.floor(encoded / 1000)}.${Math.floor((encoded % 1000) / 10)}`;
}

function read(call: string, fill: (buffer: Uint8Array) => number, size: number): string {
  const buffer = new Uint8Array(size);
  check(call, fill(buffer));
  return cString(buffer);
}

/** Reads the inventory; NVML is initialised for the call and shut down after it. */
export function readInventory(nvml: NvmlLibrary): GpuInventory {
  check("nvmlInit_v2", nvml.nvmlInit_v2());
  try {
    const driverVersion = read(
      "nvmlSystemGetDriverVersion",
      (b) => nvml.nvmlSystemGetDriverVersion(b, b.length),
      VERSION_BUFFER,
    );
    const cuda: [number] = [0];
    check("nvmlSystemGetCudaDriverVersion_v2", nvml.nvmlSystemGetCudaDriverVersion_v2(cuda));
    const count: [number] = [0];
    check("nvmlDeviceGetCount_v2", nvml.nvmlDeviceGetCount_v2(count));
    const gpus: GpuInfo[] = [];
    for (let index = 0; index < count[0]; index++) {
      const handle: [Handle] = [0];
      check("nvmlDeviceGetHandleByIndex_v2", nvml.nvmlDeviceGetHandleByIndex_v2(index, handle));
      const device = handle[0];
      const name = read("nvmlDeviceGetName", (b) => nvml.nvmlDeviceGetName(device, b, b.length), NAME_BUFFER);
      const uuid = read("nvmlDeviceGetUUID", (b) => nvml.nvmlDeviceGetUUID(device, b, b.length), UUID_BUFFER);
      const memory: { total?: number | bigint; free?: number | bigint } = {};
      check("nvmlDeviceGetMemoryInfo", nvml.nvmlDeviceGetMemoryInfo(device, memory));
      const gpu: GpuInfo = {
        index,
        name,
        uuid,
        memoryTotalBytes: Number(memory.total ?? 0),
        memoryFreeBytes: Number(memory.free ?? 0),
      };
      const celsius: [number] = [0];
      const code = nvml.nvmlDeviceGetTemperature(device, 0, celsius);
      // Some boards (and MIG slices) have no sensor to read: that is not a fault.
      if (code === NVML_SUCCESS) gpu.temperatureC = celsius[0];
      else if (code !== NVML_ERROR_NOT_SUPPORTED) check("nvmlDeviceGetTemperature", code);
      gpus.push(gpu);
    }
    return { driverVersion, cudaVersion: cudaVersionText(cuda[0]), gpus };
  } finally {
    nvml.nvmlShutdown();
  }
}

const GIB = 1024 ** 3;

/** "NVIDIA H200, 139.8 GiB (139.1 GiB free), 31 °C" */
export function describeGpu(gpu: GpuInfo): string {
  const memory = `${(gpu.memoryTotalBytes / GIB).toFixed(1)} GiB (${(gpu.memoryFreeBytes / GIB).toFixed(1)} GiB free)`;
  const temperature = gpu.temperatureC === undefined ? "" : `, ${gpu.temperatureC} °C`;
  return `${gpu.name}, ${memory}${temperature}`;
}
