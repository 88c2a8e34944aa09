// The process around a running app: a stray error ends it (docs/design.md §4.10), the shutdown signals.
import { FlashError } from "./flash-error.js";
import type { Logger } from "./log/index.js";
import { stackText } from "./log/stack.js";

const SHUTDOWN_SIGNALS = ["SIGTERM", "SIGINT"] as const;

/** An uncaught exception or unhandled rejection in the worker's process: what each job in flight ends with. */
export class StrayError extends FlashError {
  readonly code = "WORKER_STRAY_ERROR";
  override name = "StrayError";
}

let guarded = false;
/** The first stray error; later ones are logged only. */
let fault: StrayError | undefined;
/** What the mode in charge does with a stray error (the queue worker fails its jobs); else the process exits 1. */
let onFault: ((error: StrayError) => void) | undefined;

/**
 * A stray error from handler or route code (a throw in a callback, a rejection nobody awaits) is logged with its
 * stack, and the process is no longer trusted: the mode in charge answers what it holds (`whenStrayError`) and
 * exits 1, so the platform replaces the worker. Without one, the process exits 1 at once.
 */
export function guardProcess(log: Logger): void {
  if (guarded) return;
  guarded = true;
  const stray = (kind: string, err: unknown) => {
    log.error(`${kind} | ${stackText(err, String(err))}`);
    if (fault) return;
    fault = new StrayError(`${kind} in the worker: ${String(err)}`);
    if (onFault) onFault(fault);
    else process.exit(1);
  };
  process.on("uncaughtException", (err) => stray("Uncaught exception", err));
  process.on("unhandledRejection", (reason) => stray("Unhandled rejection", reason));
}

/** Hands a stray error to `handle` instead of exiting at once, until the returned function is called. */
export function whenStrayError(handle: (error: StrayError) => void): () => void {
  onFault = handle;
  if (fault) handle(fault);
  return () => {
    if (onFault === handle) onFault = undefined;
  };
}

/** Set by the local platform on the workers it spawns: their stdin is a pipe from it that ends when it dies. */
export const PARENT_PIPE_ENV = "FLASH_STOP_WITH_PARENT";

/**
 * A worker in its own process group (so a terminal's Ctrl-C reaches only the platform, which sends one SIGTERM)
 * stops as if sent SIGTERM when the platform that spawned it dies without stopping it.
 */
export function stopWithParent(env: Record<string, string | undefined>): void {
  if (env[PARENT_PIPE_ENV] !== "1") return;
  const stdin = process.stdin as NodeJS.ReadStream & { unref?: () => void };
  stdin.once("end", () => process.kill(process.pid, "SIGTERM"));
  stdin.resume();
  // Watching the pipe never keeps the worker running by itself.
  stdin.unref?.();
}

/** Calls `on` at every SIGTERM or SIGINT until the returned function is called. */
export function onShutdownSignal(on: (signal: NodeJS.Signals) => void): () => void {
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, on);
  return () => {
    for (const signal of SHUTDOWN_SIGNALS) process.off(signal, on);
  };
}

/** The first SIGTERM or SIGINT from now; `dispose` stops listening without waiting for one. */
export function nextShutdownSignal(): { signal: Promise<NodeJS.Signals>; dispose(): void } {
  let dispose = () => {};
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    dispose = onShutdownSignal((received) => {
      dispose();
      resolve(received);
    });
  });
  return { signal, dispose };
}
