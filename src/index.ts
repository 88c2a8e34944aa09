// The public API of flash-worker. Everything else under src/ is internal.

import type { Endpoint } from "./app/endpoint.js";
import { isModelServer, type ModelServer, SERVER_CONCURRENCY } from "./app/model-server/declare.js";
import { withServer } from "./app/model-server/handler.js";
import { type App, registry } from "./app/registry.js";
import { ArgumentError, NameTakenError } from "./flash-error.js";
import { defineHandler, type HandlerDefinition, type HandlerOptions } from "./job/definition.js";
import type { HandlerFn } from "./job/types.js";
import type { StandardSchemaV1 } from "./job/validate.js";
// declaredTypes from pytypes.js, not remote.js: remote.js loads the pickle codec, which only remote jobs need.
import { declaredTypes, type PyType } from "./payload/pytypes.js";
import type { RemoteClass, RemoteEntry, RemoteFunction } from "./payload/remote.js";
import { scheduleAutoStart } from "./runtime/auto-start.js";
import { type FitnessCheckFn, registerFitnessCheck } from "./runtime/fitness/registry.js";
import { startApp } from "./runtime/start.js";

// Each name here is one a handler author calls or names in a signature; the CUDA binding is `flash-worker/gpu`,
// the file helpers `flash-worker/files`, and the runtime reaches everything else through internal modules.
export {
  Endpoint,
  type RouteArgs,
  type RouteFn,
  type RouteOptions,
  type RouteRequest,
  type StartHook,
} from "./app/endpoint.js";
export { GpuGroup, GpuType } from "./app/gpu.js";
export { type ModelServer, type ServerOptions, server } from "./app/model-server/declare.js";
export { ServerExitedError, ServerHttpError } from "./app/model-server/errors.js";
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
} from "./app/openai.js";
export {
  type CudaFlavor,
  EndpointConfigError,
  type EndpointOptions,
  type NodeVersion,
} from "./app/settings.js";
export type { RouteSocket, SocketFn } from "./app/sockets.js";
export { type ErrorCode, FlashError, isFlashError } from "./flash-error.js";
export type { ConcurrencyModifier, HandlerDefinition, HandlerOptions } from "./job/definition.js";
export type { HandlerFn, HandlerReturn, Job } from "./job/types.js";
export { type StandardSchemaV1, ValidationError, type ValidationIssue } from "./job/validate.js";
export { type Logger, type LogLevel, pinoLogger } from "./log/index.js";
export type { PyType } from "./payload/pytypes.js";
export { bytearray, frozenset, PyFloat, tuple } from "./payload/values.js";
export type { FitnessCheckFn } from "./runtime/fitness/registry.js";
export { VERSION } from "./version.js";

/** handler()'s options, with the model server the worker runs beside the handler. */
export interface ServerHandlerOptions extends HandlerOptions {
  /**
   * A model server declared with server(): started with the worker, no job taken until its health check answers
   * 200; jobs whose input is `{openai_route, openai_input}` go straight to it. Concurrency defaults to
   * SERVER_CONCURRENCY (16).
   */
  server?: ModelServer;
}

/** The definition handler() and start() use: a server attached, the concurrency default a server wants. */
function definitionOf<I, O>(fn: HandlerFn<I, O>, options: ServerHandlerOptions): HandlerDefinition<I, O> {
  const { server, ...rest } = options;
  if (server === undefined) return defineHandler(fn, rest);
  if (!isModelServer(server))
    throw new ArgumentError("handler options: server must be made by server({...})");
  // Chunks gathered for /run and /runsync, as worker-vllm (return_aggregate_stream=True).
  const defaults = { concurrency: SERVER_CONCURRENCY, returnAggregateStream: true };
  const definition = defineHandler(fn, { ...defaults, ...rest }) as HandlerDefinition;
  return withServer(definition, server) as HandlerDefinition<I, O>;
}

/**
 * Registers the worker's handler and, when this file is the program (`node handler.js`), starts the
 * runtime in the mode the flags and environment choose. Under `flash run/start/dev` or in tests,
 * the caller starts it instead. With `{ input: schema }` the job's input is validated first and
 * `job.input` has the schema's type.
 */
export function handler<S extends StandardSchemaV1, O = unknown>(
  fn: HandlerFn<StandardSchemaV1.InferOutput<S>, O>,
  options: ServerHandlerOptions & { input: S },
): HandlerDefinition<StandardSchemaV1.InferInput<S>, O>;
export function handler<I = unknown, O = unknown>(
  fn: HandlerFn<I, O>,
  options?: ServerHandlerOptions,
): HandlerDefinition<I, O>;
export function handler<I = unknown, O = unknown>(
  fn: HandlerFn<I, O>,
  options: ServerHandlerOptions = {},
): HandlerDefinition<I, O> {
  const definition = definitionOf(fn, options);
  registry().app = definition as HandlerDefinition;
  scheduleAutoStart();
  return definition;
}

export interface RemoteOptions {
  /** Parameter names, so Python keyword arguments reach the right positions. */
  params?: readonly string[];
  /**
   * Python types of the parameters (by the names in `params`) and of `return`, as Python annotates them:
   * "float", "int", "list[float]", "dict[str, float]", "tuple[int, str]", "float | None", or
   * `{ field: type }` for a dict of known fields. Arguments are checked against them; declared floats go
   * back to Python as float even when whole (`3` → `3.0`).
   */
  types?: Readonly<Record<string, PyType>>;
  /**
   * Pass-through functions: arguments exactly as decoded, so an integral float (1.0) is a PyFloat and goes
   * back as float. By default every Python float arrives as a plain number.
   */
  exact?: boolean;
}

/**
 * Registers a function (or, for class mode, a class) that Python's remote-function toolkit calls by
 * name: its cloudpickle arguments are decoded, and the return value is sent back as cloudpickle.
 * Jobs whose input is not a FunctionRequest still go to the handler registered with handler(), if any.
 * Returns `target`, its type carrying `name` for a typed client.
 */
export function remote<N extends string, T extends RemoteFunction | RemoteClass>(
  name: N,
  target: T,
  options: RemoteOptions = {},
): T & { readonly "~remote"?: { readonly name: N } } {
  if (typeof name !== "string" || name.length === 0)
    throw new ArgumentError("remote(name, fn): name must be a non-empty string");
  if (typeof target !== "function")
    throw new ArgumentError(`remote("${name}", fn): fn must be a function or a class`);
  const reg = registry();
  if (reg.remotes.has(name)) throw new NameTakenError(`remote("${name}") is already registered`);
  const entry: RemoteEntry = { target };
  if (options.params) entry.params = options.params;
  if (options.types) entry.types = options.types;
  if (options.exact) entry.exact = true;
  declaredTypes(name, entry);
  reg.remotes.set(name, entry);
  scheduleAutoStart();
  // Returned so a module can export it: `endpoint<typeof app>` of flash-worker/client reads its name and types.
  return target;
}

/**
 * Registers a startup fitness check: on the platform it runs once, after the built-in system and GPU
 * checks and before the first job; if it throws (or rejects), the platform is told the worker is
 * unhealthy and the worker exits 1 without taking a job. Sync or async.
 */
export function fitnessCheck(name: string, fn: FitnessCheckFn): void {
  registerFitnessCheck(name, fn);
}

export interface StartConfig<I = unknown, O = unknown> extends ServerHandlerOptions {
  handler: HandlerFn<I, O>;
}

/**
 * The explicit form: start the runtime now with this handler, or with this Endpoint (its routes on
 * `PORT`, or its queue handler); resolves when it stops.
 */
export async function start<I = unknown, O = unknown>(config: StartConfig<I, O> | Endpoint): Promise<void> {
  let app: App;
  // An Endpoint (of this copy of the package or another) says so in its kind; a StartConfig has none.
  if ("kind" in config) {
    app = config;
  } else {
    const { handler: fn, ...options } = config;
    app = definitionOf(fn, options) as HandlerDefinition;
  }
  const reg = registry();
  reg.app = app;
  reg.managed = true;
  process.exitCode = await startApp(app);
}
