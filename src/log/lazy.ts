// A Logger that loads pino only when a line at an enabled level is written: the heartbeat thread mostly writes none.
import type { LogBindings, Logger, LoggerOptions, LogLevel } from "./index.js";

const RANK: Record<LogLevel, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50, SILENT: 100 };

type Method = "trace" | "debug" | "info" | "warn" | "error";

/** The same lines createLogger(options).child(bindings) writes, in order; pino is imported on the first one. */
export function lazyLogger(options: LoggerOptions, bindings: LogBindings): Logger {
  let real: Promise<Logger> | undefined;
  const load = () => {
    real ??= import("./index.js").then(({ createLogger }) => createLogger(options).child(bindings));
    return real;
  };
  const method = (name: Method) => (message: string, fields?: Record<string, unknown>) => {
    if (RANK[name.toUpperCase() as LogLevel] < RANK[options.level]) return;
    // One promise chain: lines keep their order even while pino loads.
    void load().then((logger) => logger[name](message, fields));
  };
  return {
    trace: method("trace"),
    debug: method("debug"),
    info: method("info"),
    warn: method("warn"),
    error: method("error"),
    child: (more) => lazyLogger(options, { ...bindings, ...more }),
    level: options.level,
  };
}
