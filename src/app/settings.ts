// Endpoint configuration: each field checked at construction, with docs/toolkit.md §4.1's messages where it has one.
import { FlashError, isFlashError } from "../flash-error.js";
import { GpuGroup, type GpuType, isGpuGroup, isGpuType } from "./gpu.js";
import { isModelServer, type ModelServer, SERVER_CONCURRENCY } from "./model-server/declare.js";

/** A bad Endpoint option or route; the message is API (docs/design.md §4.4) and tests assert it. */
export class EndpointConfigError extends FlashError {
  readonly code = "ENDPOINT_CONFIG_INVALID";
  override name = "EndpointConfigError";
}

/** By code: the user's file may load its own copy of this module (tsx), so instanceof can miss. */
export const isEndpointConfigError = (err: unknown): err is EndpointConfigError =>
  isFlashError(err, "ENDPOINT_CONFIG_INVALID");

/** Node.js majors the images ship, the counterpart of the toolkit's Python 3.10–3.13. */
export const SUPPORTED_NODE_VERSIONS = ["20", "22", "24"] as const;
export type NodeVersion = (typeof SUPPORTED_NODE_VERSIONS)[number];
export const DEFAULT_NODE_VERSION: NodeVersion = "24";

/**
 * The CUDA image a GPU endpoint's generated image is built on: `base` (flash-worker:cuda, libcudart only; enough for
 * the runtime and flash-worker/gpu, which use the host driver), `runtime` (:cuda-runtime, adds cuBLAS, cuFFT, NCCL
 * and the other CUDA libraries) or `cudnn` (:cuda-cudnn, adds cuDNN 9 on top).
 */
export const CUDA_FLAVORS = ["base", "runtime", "cudnn"] as const;
export type CudaFlavor = (typeof CUDA_FLAVORS)[number];

/** What `new Endpoint({...})` takes (the interface document's "Toolkit endpoint configuration"). */
export interface EndpointOptions {
  /** Endpoint name, unique per app; required once routes are declared. */
  name?: string;
  /** A GpuGroup, a GpuType, or a list of them (any card in the set; order is not kept). Default GpuGroup.ANY. */
  gpu?: GpuGroup | GpuType | readonly (GpuGroup | GpuType)[];
  /** CPU instance type name(s) such as `cpu5c-4-8`, instead of gpu. */
  cpu?: string | readonly string[];
  /** Worker count range `[min, max]`; a number n means `[0, n]`. Default `[0, 1]`. */
  workers?: number | readonly [number, number];
  /** Network volume id. */
  volume?: string;
  /** npm package specs installed on the worker: `zod`, `zod@^3`, `zod==3.23.8`, `zod>=3`. */
  dependencies?: readonly string[];
  /** Execution timeout per request or job, in ms; 0 = no limit (the default). */
  executionTimeoutMs?: number;
  /** Node.js major the worker runs: one of SUPPORTED_NODE_VERSIONS. */
  nodeVersion?: NodeVersion | number;
  /** Queue-based use: jobs run at once on one worker (default 1). */
  maxConcurrency?: number;
  /** Seconds an idle worker above `workers[0]` is kept before it stops (1–3600; the platform's default when unset). */
  idleTimeout?: number;
  /** Cold-start acceleration: true (FLASHBOOT), false (OFF), or "PRIORITY_FLASHBOOT". */
  flashboot?: boolean | "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";
  /** Lowest CUDA version of the host (`major.minor`, e.g. "12.1"); GPU endpoints only. */
  minCudaVersion?: string;
  /** The CUDA libraries `flash deploy`'s image carries (one of CUDA_FLAVORS, default "base"); GPU endpoints only. */
  cudaFlavor?: CudaFlavor;
  /** Environment variables of the deployed workers. */
  env?: Readonly<Record<string, string>>;
  /**
   * A model server made by server(): started with each worker; routes not declared in TS are proxied to it
   * (load-balanced), or its OpenAI passthrough answers `{openai_route}` jobs (`.handler(fn)`). maxConcurrency
   * then defaults to SERVER_CONCURRENCY (16).
   */
  server?: ModelServer;
}

/** The validated, normalised configuration. */
export interface EndpointSettings {
  name?: string;
  /** Sorted and without repeats: the platform treats the list as a set. */
  gpu?: readonly string[];
  cpu?: readonly string[];
  workers: readonly [min: number, max: number];
  volume?: string;
  dependencies: readonly string[];
  executionTimeoutMs: number;
  nodeVersion: NodeVersion;
  maxConcurrency: number;
  idleTimeout?: number;
  flashboot?: "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";
  minCudaVersion?: string;
  cudaFlavor?: CudaFlavor;
  env?: Readonly<Record<string, string>>;
  server?: ModelServer;
}

const OPTION_NAMES = [
  "name",
  "gpu",
  "cpu",
  "workers",
  "volume",
  "dependencies",
  "executionTimeoutMs",
  "nodeVersion",
  "maxConcurrency",
  "idleTimeout",
  "flashboot",
  "minCudaVersion",
  "cudaFlavor",
  "env",
  "server",
] as const;

/** `cpu3c-2-4`, `cpu5c-4-8`, `cpu5g-8-32`: generation, class, vCPUs, GiB. */
const CPU_INSTANCE = /^cpu\d+[a-z]+-\d+-\d+$/;
/** An npm name (optionally scoped) with an optional `@range` or pip-style `==`/`>=`/... version. */
const DEPENDENCY =
  /^(@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*(@[^\s@]+|\s*(==|>=|<=|!=|~=|>|<)\s*[0-9A-Za-z.*+^~-]+)?$/i;

const typeName = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value;

const show = (value: unknown): string => {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

/** Validates every option; throws EndpointConfigError naming the first bad one. */
export function parseEndpointOptions(options: EndpointOptions): EndpointSettings {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new EndpointConfigError(`Endpoint options must be an object, got ${typeName(options)}`);
  }
  checkUnknown(options);
  const { gpu, cpu } = options;
  if (gpu !== undefined && cpu !== undefined) {
    throw new EndpointConfigError("gpu and cpu are mutually exclusive. specify one or neither.");
  }
  const settings: EndpointSettings = {
    workers: parseWorkers(options.workers),
    dependencies: parseDependencies(options.dependencies),
    executionTimeoutMs: parseTimeout(options.executionTimeoutMs),
    nodeVersion: parseNodeVersion(options.nodeVersion),
    maxConcurrency:
      options.maxConcurrency === undefined && options.server !== undefined
        ? SERVER_CONCURRENCY
        : parseConcurrency(options.maxConcurrency),
  };
  if (options.server !== undefined) {
    if (!isModelServer(options.server))
      throw new EndpointConfigError(`server must be made by server({...}), got ${typeName(options.server)}`);
    settings.server = options.server;
  }
  if (options.name !== undefined) settings.name = parseName(options.name);
  if (cpu !== undefined) settings.cpu = parseCpu(cpu);
  else settings.gpu = parseGpu(gpu ?? GpuGroup.ANY);
  if (options.volume !== undefined) settings.volume = parseVolume(options.volume);
  if (options.idleTimeout !== undefined) settings.idleTimeout = parseIdleTimeout(options.idleTimeout);
  if (options.flashboot !== undefined) settings.flashboot = parseFlashboot(options.flashboot);
  if (options.minCudaVersion !== undefined) {
    if (settings.cpu)
      throw new EndpointConfigError("minCudaVersion applies to GPU endpoints only, not cpu ones");
    settings.minCudaVersion = parseCudaVersion(options.minCudaVersion);
  }
  if (options.cudaFlavor !== undefined) {
    if (settings.cpu) throw new EndpointConfigError("cudaFlavor applies to GPU endpoints only, not cpu ones");
    settings.cudaFlavor = parseCudaFlavor(options.cudaFlavor);
  }
  if (options.env !== undefined) settings.env = parseEnv(options.env);
  return settings;
}

function checkUnknown(options: object): void {
  const unknown = Object.keys(options).filter((key) => !(OPTION_NAMES as readonly string[]).includes(key));
  if (unknown.length === 0) return;
  const described = unknown.map((key) => {
    const near = closest(key, OPTION_NAMES);
    return near ? `'${key}' (Did you mean '${near}'?)` : `'${key}'`;
  });
  const noun = unknown.length === 1 ? "option" : "options";
  throw new EndpointConfigError(`Endpoint() got unknown ${noun}: ${described.join(", ")}`);
}

function parseName(name: unknown): string {
  if (typeof name !== "string" || name.trim() === "") {
    throw new EndpointConfigError(`name must be a non-empty string, got ${typeName(name)}: ${show(name)}`);
  }
  return name;
}

function parseGpu(gpu: unknown): string[] {
  const list = typeof gpu === "string" ? [gpu] : gpu;
  if (!Array.isArray(list)) {
    throw new EndpointConfigError(`gpu must be a GpuGroup, GpuType, or list, got ${typeName(gpu)}`);
  }
  if (list.length === 0) throw new EndpointConfigError("gpu list must not be empty");
  for (const item of list) {
    if (!isGpuGroup(item) && !isGpuType(item)) {
      throw new EndpointConfigError(
        `gpu must be a GpuGroup, GpuType, or list, got ${typeName(item)}: ${show(item)}. e.g. GpuGroup.ANY or GpuType.NVIDIA_RTX_A6000`,
      );
    }
  }
  return [...new Set(list as string[])].sort();
}

function parseCpu(cpu: unknown): string[] {
  const list = typeof cpu === "string" ? [cpu] : cpu;
  if (!Array.isArray(list)) {
    throw new EndpointConfigError(`cpu must be an instance type name or list, got ${typeName(cpu)}`);
  }
  if (list.length === 0) throw new EndpointConfigError("cpu list must not be empty");
  for (const item of list) {
    if (typeof item !== "string" || !CPU_INSTANCE.test(item)) {
      throw new EndpointConfigError(`cpu must be an instance type name like 'cpu5c-4-8', got: ${show(item)}`);
    }
  }
  return [...new Set(list as string[])].sort();
}

function parseWorkers(workers: unknown): readonly [number, number] {
  if (workers === undefined) return [0, 1];
  let pair: [unknown, unknown];
  if (typeof workers === "number") pair = [0, workers];
  else if (Array.isArray(workers) && workers.length === 2) pair = [workers[0], workers[1]];
  else {
    throw new EndpointConfigError(
      `workers must be an int or (min, max) tuple, got ${typeName(workers)}: ${show(workers)}`,
    );
  }
  const [min, max] = pair;
  if (!Number.isInteger(min) || !Number.isInteger(max)) {
    throw new EndpointConfigError(
      `workers must be an int or (min, max) tuple, got ${typeName(workers)}: ${show(workers)}`,
    );
  }
  const [a, b] = [min as number, max as number];
  if (a < 0 || b < 0) throw new EndpointConfigError(`workers cannot be negative: (${a}, ${b})`);
  if (a > b) throw new EndpointConfigError(`workers min (${a}) cannot exceed max (${b})`);
  return [a, b];
}

function parseVolume(volume: unknown): string {
  if (typeof volume !== "string" || volume.trim() === "") {
    throw new EndpointConfigError(
      `volume must be a network volume id (a non-empty string), got ${typeName(volume)}: ${show(volume)}`,
    );
  }
  return volume;
}

function parseDependencies(dependencies: unknown): string[] {
  if (dependencies === undefined) return [];
  if (!Array.isArray(dependencies)) {
    throw new EndpointConfigError(
      `dependencies must be a list of package specs, got ${typeName(dependencies)}: ${show(dependencies)}`,
    );
  }
  for (const spec of dependencies) {
    if (typeof spec !== "string" || !DEPENDENCY.test(spec.trim())) {
      throw new EndpointConfigError(
        `invalid dependency spec ${show(spec)}: expected a package name with an optional version, e.g. 'zod', 'zod@^3', 'zod==3.23.8' or 'zod>=3'`,
      );
    }
  }
  return dependencies.map((spec: string) => spec.trim());
}

function parseTimeout(ms: unknown): number {
  if (ms === undefined) return 0;
  if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 0) {
    throw new EndpointConfigError(
      `executionTimeoutMs must be a whole number of milliseconds >= 0 (0 = no limit), got ${show(ms)}`,
    );
  }
  return ms;
}

function parseNodeVersion(version: unknown): NodeVersion {
  if (version === undefined) return DEFAULT_NODE_VERSION;
  const text = typeof version === "number" || typeof version === "string" ? String(version).trim() : "";
  const major = /^v?(\d+)(\.x)?$/.exec(text)?.[1];
  const found = SUPPORTED_NODE_VERSIONS.find((v) => v === major);
  if (!found) {
    throw new EndpointConfigError(
      `Node.js ${show(version)} is not supported. Supported versions: ${SUPPORTED_NODE_VERSIONS.join(", ")}`,
    );
  }
  return found;
}

function parseConcurrency(value: unknown): number {
  if (value === undefined) return 1;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new EndpointConfigError(`maxConcurrency must be >= 1, got ${show(value)}`);
  }
  return value;
}

function parseIdleTimeout(value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 3600) {
    throw new EndpointConfigError(`idleTimeout must be whole seconds from 1 to 3600, got ${show(value)}`);
  }
  return value;
}

function parseFlashboot(value: unknown): "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT" {
  if (value === true) return "FLASHBOOT";
  if (value === false) return "OFF";
  if (value === "OFF" || value === "FLASHBOOT" || value === "PRIORITY_FLASHBOOT") return value;
  throw new EndpointConfigError(
    `flashboot must be true, false, "OFF", "FLASHBOOT" or "PRIORITY_FLASHBOOT", got ${show(value)}`,
  );
}

function parseCudaVersion(value: unknown): string {
  if (typeof value !== "string" || !/^\d+\.\d+$/.test(value)) {
    throw new EndpointConfigError(`minCudaVersion must be "major.minor" such as "12.1", got ${show(value)}`);
  }
  return value;
}

function parseCudaFlavor(value: unknown): CudaFlavor {
  if (!(CUDA_FLAVORS as readonly unknown[]).includes(value)) {
    throw new EndpointConfigError(
      `cudaFlavor must be one of ${CUDA_FLAVORS.map((f) => `"${f}"`).join(", ")}, got ${show(value)}`,
    );
  }
  return value as CudaFlavor;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function parseEnv(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new EndpointConfigError(`env must be an object of strings, got ${typeName(value)}`);
  }
  const out: Record<string, string> = {};
  for (const [name, text] of Object.entries(value)) {
    if (!ENV_NAME.test(name)) throw new EndpointConfigError(`env: invalid variable name ${show(name)}`);
    if (typeof text !== "string") {
      throw new EndpointConfigError(`env.${name} must be a string, got ${typeName(text)}: ${show(text)}`);
    }
    out[name] = text;
  }
  return out;
}

/** The name a typo most likely meant (an option, an endpoint id), if any is close enough. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = distance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  const near =
    best !== undefined &&
    (bestDistance <= Math.max(2, Math.floor(best.length / 3)) ||
      best.toLowerCase().startsWith(word.toLowerCase()));
  return near ? best : undefined;
}

function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
    }
    previous = current;
  }
  return previous[b.length]!;
}
