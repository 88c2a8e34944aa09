// The process around a running app: stray errors logged instead of fatal, and the shutdown signals.
import type { Logger } from "./log/index.js";

const SHUTDOWN_SIGNALS = ["SIGTERM", "SIGINT"] as const;

/** Keeps a worker alive through stray errors from handler or route code: they are logged, not fatal. */
export function guardProcess(log: Logger): void {
  process.on("uncaughtException", (err) => log.error(`Uncaught exception | ${err.stack ?? err.message}`));
  process.on("unhandledRejection", (reason) =>
    log.error(
      `Unhandled rejection | ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
    ),
  );
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
