// Stray errors from user code (an uncaught throw in a callback, a rejection nobody awaits): logged, never fatal,
// the same in every mode, so one bad job or request does not take the worker down.

import type { Logger } from "./index.js";
import { stackText } from "./stack.js";

let installed = false;

/** Logs uncaught exceptions and unhandled rejections as errors instead of letting Node end the process. */
export function logStrayErrors(log: Logger): void {
  if (installed) return;
  installed = true;
  process.on("uncaughtException", (err) => log.error(`Uncaught exception | ${stackText(err, String(err))}`));
  process.on("unhandledRejection", (reason) =>
    log.error(`Unhandled rejection | ${stackText(reason, String(reason))}`),
  );
}
