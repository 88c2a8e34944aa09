// What the runtime knows about the host's GPUs, read once per process: the facts for logs, /ping and doctor.
import { isFlashError } from "../flash-error.js";
import type { Logger } from "../log/index.js";
import { driverPresent, loadNvml } from "./ffi.js";
import { describeGpu, type GpuInventory, readInventory } from "./nvml.js";

/** No GPU (the normal answer on a CPU host), the inventory, or a driver that is there but broken. */
export type GpuFacts =
  | { state: "none"; reason: string }
  | { state: "ok"; inventory: GpuInventory }
  | { state: "error"; error: string };

type Env = Record<string, string | undefined>;

/** Reads the facts: no library is loaded where there is no trace of an NVIDIA driver. */
export async function readGpuFacts(env: Env = process.env): Promise<GpuFacts> {
  if (!driverPresent(env)) return { state: "none", reason: "no NVIDIA driver on this host" };
  try {
    const inventory = readInventory(await loadNvml(env));
    if (inventory.gpus.length === 0) return { state: "none", reason: "the NVIDIA driver reports no GPU" };
    return { state: "ok", inventory };
  } catch (err) {
    // Device nodes without NVML: a container started without the driver's utility libraries.
    if (isFlashError(err, "GPU_DRIVER_NOT_FOUND")) return { state: "none", reason: err.message };
    return { state: "error", error: err instanceof Error ? err.message : String(err) };
  }
}

let facts: Promise<GpuFacts> | undefined;
let known: GpuFacts | undefined;

/** The process's GPU facts, read on first use. */
export function gpuFacts(): Promise<GpuFacts> {
  facts ??= readGpuFacts().then((value) => {
    known = value;
    return value;
  });
  return facts;
}

/** The facts if they have been read, for answers that must not wait (the load-balanced /ping). */
export function knownGpuFacts(): GpuFacts | undefined {
  return known;
}

/** The /ping body's `gpus`: one entry per GPU; absent on a CPU host. */
export function gpuSummary(value: GpuFacts | undefined = known): object | undefined {
  if (value?.state !== "ok") return undefined;
  const { driverVersion, cudaVersion, gpus } = value.inventory;
  return {
    driver: driverVersion,
    cuda: cudaVersion,
    gpus: gpus.map((gpu) => ({ name: gpu.name, memoryTotalMiB: Math.round(gpu.memoryTotalBytes / 1048576) })),
  };
}

/** "NVIDIA H200", or "2 × NVIDIA H200" for several alike: for views with one short line per worker. */
export function gpuLabel(value: GpuFacts): string | undefined {
  if (value.state !== "ok") return undefined;
  const counts = new Map<string, number>();
  for (const gpu of value.inventory.gpus) counts.set(gpu.name, (counts.get(gpu.name) ?? 0) + 1);
  return [...counts].map(([name, n]) => (n > 1 ? `${n} × ${name}` : name)).join(", ");
}

/** The start log's GPU lines: one per GPU with the driver and CUDA version, or nothing on a CPU host. */
export function logGpus(log: Logger, value: GpuFacts): void {
  if (value.state === "none") {
    log.debug(`GPU: none (${value.reason})`);
    return;
  }
  if (value.state === "error") {
    log.warn(`GPU: the NVIDIA driver is present but NVML failed: ${value.error}`);
    return;
  }
  const { driverVersion, cudaVersion, gpus } = value.inventory;
  for (const gpu of gpus) {
    log.info(`GPU ${gpu.index}: ${describeGpu(gpu)} | driver ${driverVersion}, CUDA ${cudaVersion}`);
  }
}
