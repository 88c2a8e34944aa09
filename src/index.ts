// The public API of flash-worker. Everything else under src/ is internal.
import { type FitnessCheckFn, registerFitnessCheck } from "./fitness/registry.js";
import { defineHandler, type HandlerDefinition, type HandlerOptions } from "./job/definition.js";
import type { HandlerFn } from "./job/types.js";
import type { StandardSchemaV1 } from "./job/validate.js";
import type { RemoteClass, RemoteFunction } from "./payload/remote.js";
import { scheduleAutoStart } from "./runtime/auto-start.js";
import { registry } from "./runtime/registry.js";
import { startApp } from "./runtime/start.js";

export {
  DownloadError,
  type DownloadedFile,
  type DownloadOptions,
  download,
} from "./files/download.js";
export {
  hasBucket,
  type UploadData,
  UploadError,
  type UploadedFile,
  type UploadOptions,
  upload,
} from "./files/upload.js";
export type { FitnessCheckFn } from "./fitness/registry.js";
export {
  Cuda,
  CudaContext,
  CudaError,
  type DeviceBuffer,
  type Dim3,
  GpuCheckError,
  type GpuFacts,
  type GpuInfo,
  type GpuInventory,
  gpuFacts,
  type Kernel,
  NoGpuError,
  NvmlError,
  pointerParam,
  runSaxpy,
  SAXPY_PTX,
  type SaxpyResult,
} from "./gpu/index.js";
export type { ConcurrencyModifier, HandlerDefinition, HandlerOptions } from "./job/definition.js";
export type { HandlerFn, HandlerReturn, Job, JobResult, RawJob } from "./job/types.js";
export { type StandardSchemaV1, ValidationError, type ValidationIssue } from "./job/validate.js";
export type { Logger, LogLevel } from "./log/index.js";
export { bytearray, frozenset, PyFloat, tuple } from "./payload/values.js";
export {
  Endpoint,
  type EndpointHandlerDefinition,
  type RouteArgs,
  type RouteFn,
  type RouteRequest,
  type StartHook,
} from "./routes/endpoint.js";
export { GpuGroup, GpuType } from "./routes/gpu.js";
export {
  type ChatCompletionRequest,
  type ChatMessage,
  type CompatibleWorker,
  type CompletionObject,
  type CompletionRequest,
  type CompletionResult,
  type ModelInfo,
  type OpenAIJobInput,
  openaiCompatible,
} from "./routes/openai.js";
export {
  EndpointConfigError,
  type EndpointOptions,
  type EndpointSettings,
  type NodeVersion,
  SUPPORTED_NODE_VERSIONS,
} from "./routes/settings.js";
export { VERSION } from "./version.js";

/**
 * Registers the worker's handler and, when this file is the program (`node handler.js`), starts the
 * runtime in the mode the flags and environment choose. Under `flash run/start/dev` or in tests,
 * the caller starts it instead. With `{ input: schema }` the job's input is validated first and
 * `job.input` has the schema's type.
 */
export function handler<S extends StandardSchemaV1, O = unknown>(
  fn: HandlerFn<StandardSchemaV1.InferOutput<S>, O>,
  options: HandlerOptions & { input: S },
): HandlerDefinition<StandardSchemaV1.InferInput<S>, O>;
export function handler<I = unknown, O = unknown>(
  fn: HandlerFn<I, O>,
  options?: HandlerOptions,
): HandlerDefinition<I, O>;
export function handler<I = unknown, O = unknown>(
  fn: HandlerFn<I, O>,
  options?: HandlerOptions,
): HandlerDefinition<I, O> {
  const definition = defineHandler(fn, options);
  registry().app = definition as HandlerDefinition;
  scheduleAutoStart();
  return definition;
}

export interface RemoteOptions {
  /** Parameter names, so Python keyword arguments reach the right positions. */
  params?: readonly string[];
}

/**
 * Registers a function (or, for class mode, a class) that Python's remote-function toolkit calls by
 * name: its cloudpickle arguments are decoded, and the return value is sent back as cloudpickle.
 * Jobs whose input is not a FunctionRequest still go to the handler registered with handler(), if any.
 */
export function remote(
  name: string,
  target: RemoteFunction | RemoteClass,
  options: RemoteOptions = {},
): void {
  if (typeof name !== "string" || name.length === 0)
    throw new TypeError("remote(name, fn): name must be a non-empty string");
  if (typeof target !== "function")
    throw new TypeError(`remote("${name}", fn): fn must be a function or a class`);
  const reg = registry();
  if (reg.remotes.has(name)) throw new Error(`remote("${name}") is already registered`);
  reg.remotes.set(name, options.params ? { target, params: options.params } : target);
  scheduleAutoStart();
}

/**
 * Registers a startup fitness check: on the platform it runs once, after the built-in system and GPU
 * checks and before the first job; if it throws (or rejects), the platform is told the worker is
 * unhealthy and the worker exits 1 without taking a job. Sync or async.
 */
export function fitnessCheck(name: string, fn: FitnessCheckFn): void {
  registerFitnessCheck(name, fn);
}

export interface StartConfig<I = unknown, O = unknown> extends HandlerOptions {
  handler: HandlerFn<I, O>;
}

/** The explicit form: start the runtime now with this handler; resolves when it stops. */
export async function start<I = unknown, O = unknown>(config: StartConfig<I, O>): Promise<void> {
  const { handler: fn, ...options } = config;
  const definition = defineHandler(fn, options) as HandlerDefinition;
  const reg = registry();
  reg.app = definition;
  reg.managed = true;
  process.exitCode = await startApp(definition);
}
