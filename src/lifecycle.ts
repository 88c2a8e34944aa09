// The process around a running app: stray errors logged instead of fatal, the shutdown signals, nextTick's shapes.
import { executionAsyncResource } from "node:async_hooks";
import type { Logger } from "./log/index.js";
import { stackText } from "./log/stack.js";

const SHUTDOWN_SIGNALS = ["SIGTERM", "SIGINT"] as const;

let guarded = false;

/**
 * Stray errors from handler or route code (an uncaught throw in a callback, a rejection nobody awaits) are
 * logged with their stack, never fatal, the same in every mode (flash run too): the job or request decides.
 */
export function guardProcess(log: Logger): void {
  if (guarded) return;
  guarded = true;
  process.on("uncaughtException", (err) => log.error(`Uncaught exception | ${stackText(err, String(err))}`));
  process.on("unhandledRejection", (reason) =>
    log.error(`Unhandled rejection | ${stackText(reason, String(reason))}`),
  );
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

/** One of node's nextTick records, held for the life of the process (keepTickShapes). */
let keptTick: object | undefined;

/**
 * Holds one of node's nextTick records for good. V8 keeps those records' hidden classes only while one is alive:
 * a full collection at start-up, with none queued, drops them, the first requests build them again, and
 * nextTick's property stores, which still remember the dropped ones, turn megamorphic for the life of the
 * process, ~5 µs more per HTTP request (docs/benchmarks.md, issue 29). A record kept alive keeps its classes.
 */
export function keepTickShapes(): void {
  if (keptTick !== undefined) return;
  // Inside a nextTick callback the execution resource is that callback's record.
  process.nextTick(() => {
    keptTick = executionAsyncResource();
  });
}
