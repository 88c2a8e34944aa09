// The public API of flash-worker. Everything else under src/ is internal.
import { defineHandler, type HandlerDefinition, type HandlerOptions } from "./job/definition.js";
import type { HandlerFn } from "./job/types.js";
import { registry } from "./runtime/registry.js";
import { startApp } from "./runtime/start.js";

export type { ConcurrencyModifier, HandlerDefinition, HandlerOptions } from "./job/definition.js";
export type { HandlerFn, HandlerReturn, Job, JobResult, RawJob } from "./job/types.js";
export type { Logger, LogLevel } from "./log/index.js";
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
 * the caller starts it instead.
 */
export function handler<I = unknown, O = unknown>(
  fn: HandlerFn<I, O>,
  options?: HandlerOptions,
): HandlerDefinition<I, O> {
  const definition = defineHandler(fn, options);
  const reg = registry();
  reg.app = definition as HandlerDefinition;
  // Deferred so that a runner importing this module can claim it first.
  setImmediate(() => {
    if (reg.managed || process.env.VITEST) return;
    reg.managed = true;
    void startApp(definition as HandlerDefinition).then(exit, fail);
  });
  return definition;
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

function exit(code: number): void {
  process.exitCode = code;
  // Handler code may leave timers or sockets open; the runtime's end is the program's end.
  setImmediate(() => process.exit(code));
}

function fail(err: unknown): void {
  process.stderr.write(`flash-worker: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  exit(1);
}
