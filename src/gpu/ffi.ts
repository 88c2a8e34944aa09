// koffi bindings to the NVIDIA driver's libnvidia-ml.so.1 and libcuda.so.1, loaded on demand: a host
// without the driver never imports koffi, and a failing dlopen means "no GPU".

import { existsSync } from "node:fs";
import { join } from "node:path";
import { FlashError } from "../flash-error.js";
import { CUDA_PROTOTYPES, type CudaLibrary, NVML_PROTOTYPES, type NvmlLibrary } from "./library.js";

/** Where the driver's libraries are when they are not on the loader's path (e.g. /usr/local/nvidia/lib64). */
export const LIBRARY_DIR_ENV = "FLASH_GPU_LIBRARY_DIR";

type Env = Record<string, string | undefined>;

/**
 * Cheap evidence of an NVIDIA driver (no library load): its /proc entry or control device, as the
 * NVIDIA container toolkit mounts them, or an explicit library folder.
 */
export function driverPresent(env: Env = process.env): boolean {
  return (
    Boolean(env[LIBRARY_DIR_ENV]) || existsSync("/proc/driver/nvidia/version") || existsSync("/dev/nvidiactl")
  );
}

/** The driver library could not be loaded: on a host without an NVIDIA driver this is the normal answer. */
export class DriverNotFound extends FlashError {
  readonly code = "GPU_DRIVER_NOT_FOUND";
  override name = "DriverNotFound";
}

type Koffi = typeof import("koffi").default;
let koffiModule: Promise<Koffi> | undefined;

async function koffi(): Promise<Koffi> {
  koffiModule ??= import("koffi").then((m) => m.default);
  return koffiModule;
}

function libraryPath(file: string, env: Env): string {
  const dir = env[LIBRARY_DIR_ENV];
  return dir ? join(dir, file) : file;
}

async function bind<T>(file: string, prototypes: Record<string, string>, env: Env): Promise<T> {
  const ffi = await koffi();
  let library: ReturnType<Koffi["load"]>;
  try {
    library = ffi.load(libraryPath(file, env));
  } catch (err) {
    throw new DriverNotFound(`${file} could not be loaded: ${(err as Error).message}`);
  }
  const calls: Record<string, unknown> = {};
  for (const [name, prototype] of Object.entries(prototypes)) {
    try {
      calls[name] = library.func(prototype);
    } catch (err) {
      throw new DriverNotFound(`${file} has no ${name} (driver too old?): ${(err as Error).message}`);
    }
  }
  return calls as T;
}

let nvmlTypes = false;

/** Binds libnvidia-ml.so.1; throws DriverNotFound where it is missing. */
export async function loadNvml(env: Env = process.env): Promise<NvmlLibrary> {
  if (!nvmlTypes) {
    const ffi = await koffi();
    ffi.struct("nvmlMemory_t", {
      total: "unsigned long long",
      free: "unsigned long long",
      used: "unsigned long long",
    });
    nvmlTypes = true;
  }
  return bind<NvmlLibrary>("libnvidia-ml.so.1", NVML_PROTOTYPES, env);
}

/** Binds libcuda.so.1 (the driver API); throws DriverNotFound where it is missing. */
export async function loadCuda(env: Env = process.env): Promise<CudaLibrary> {
  return bind<CudaLibrary>("libcuda.so.1", CUDA_PROTOTYPES, env);
}
