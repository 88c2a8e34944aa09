// LOG_FORMAT=json: one JSON object per line, written by pino. Loaded by openLogger() only in that mode, so the
// default worker never pays pino's import (docs/design.md §4 item 9).
import { type Logger as Pino, pino, stdTimeFunctions } from "pino";
import {
  type LogBindings,
  type Logger,
  type LoggerOptions,
  type LogLevel,
  PINO,
  truncateMessage,
} from "./index.js";
import { redact } from "./redact.js";
import { stdoutLines } from "./stdout.js";
import { activeTraceId } from "./trace.js";

const PINO_LEVEL: Record<LogLevel, string> = {
  TRACE: "trace",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
  SILENT: "silent",
};

class PinoLogger implements Logger {
  readonly [PINO]: Pino;

  constructor(
    private readonly root: Pino,
    readonly level: LogLevel,
    private readonly bindings: LogBindings,
  ) {
    // Children are made from the root with merged bindings, so a rebound key is written once.
    this[PINO] = Object.keys(bindings).length > 0 ? root.child(bindings) : root;
  }

  trace(message: string, fields?: Record<string, unknown>): void {
    this[PINO].trace(fields ?? {}, truncateMessage(message));
  }
  debug(message: string, fields?: Record<string, unknown>): void {
    this[PINO].debug(fields ?? {}, truncateMessage(message));
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this[PINO].info(fields ?? {}, truncateMessage(message));
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this[PINO].warn(fields ?? {}, truncateMessage(message));
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this[PINO].error(fields ?? {}, truncateMessage(message));
  }
  child(bindings: LogBindings): Logger {
    return new PinoLogger(this.root, this.level, { ...this.bindings, ...bindings });
  }
}

/** A Logger whose lines are pino's: {"level","time","subject"|"requestId",…fields,"traceId"?,"message"}. */
export function createJsonLogger(options: LoggerOptions): Logger {
  const out = options.destination ?? stdoutLines;
  const root = pino(
    {
      level: PINO_LEVEL[options.level],
      base: null,
      messageKey: "message",
      timestamp: stdTimeFunctions.isoTime,
      // The labels the text format and the platform's JSON use: INFO, WARN, ERROR.
      formatters: { level: (label) => ({ level: label.toUpperCase() }) },
      mixin: () => {
        const traceId = activeTraceId();
        return traceId === undefined ? {} : { traceId };
      },
    },
    { write: (line: string) => out.write(redact(line)) },
  );
  return new PinoLogger(root, options.level, {});
}
