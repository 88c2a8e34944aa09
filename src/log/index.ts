// The one logger: pino underneath, runpod-python's levels and line formats (text or JSON) on top.
import { type Level, pino } from "pino";

export { describeError } from "./describe.js";

/** The levels users name in LOG_LEVEL; "SILENT" turns logging off (runpod-python's NOTSET). */
export type LogLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";

/** What a log line is about: a job id, or a component such as "worker" or "heartbeat". */
export interface LogBindings {
  requestId?: string;
  subject?: string;
  batchId?: string;
}

/** The logger handlers and the runtime write to; pino underneath, a small surface on top. */
export interface Logger {
  trace(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(bindings: LogBindings): Logger;
  readonly level: LogLevel;
}

export interface LoggerOptions {
  level: LogLevel;
  /** JSON lines for the platform's log collector (set when RUNPOD_ENDPOINT_ID is present). */
  json: boolean;
  /** Where lines go; stdout by default, like runpod-python. */
  destination?: { write(line: string): unknown };
}

/** Messages longer than this are cut in the middle (runpod-python rp_logger, docs/protocol.md §7.1). */
export const MAX_MESSAGE_LENGTH = 4096;

const PINO_LEVEL: Record<LogLevel, Level | "silent"> = {
  TRACE: "trace",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  ERROR: "error",
  SILENT: "silent",
};

const LEVEL_LABEL: Record<number, string> = {
  10: "TRACE",
  20: "DEBUG",
  30: "INFO",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};

export function truncateMessage(message: string): string {
  if (message.length <= MAX_MESSAGE_LENGTH) return message;
  const half = MAX_MESSAGE_LENGTH / 2;
  const cut = message.length - MAX_MESSAGE_LENGTH;
  return `${message.slice(0, half)}\n...TRUNCATED ${cut} CHARACTERS...\n${message.slice(-half)}`;
}

/** Turns one pino JSON record into the line the user sees: text for people, JSON for the platform. */
export function formatRecord(record: Record<string, unknown>, json: boolean): string {
  const { level, time, msg, requestId, subject, batchId, ...fields } = record;
  const label = LEVEL_LABEL[level as number] ?? String(level);
  let message = typeof msg === "string" ? msg : "";
  if (typeof batchId === "string") message = `[batchId=${batchId}] ${message}`;
  message = truncateMessage(message);
  if (json) {
    return `${JSON.stringify({ requestId: typeof requestId === "string" ? requestId : null, level: label, message, ...fields })}\n`;
  }
  const who =
    typeof requestId === "string" ? requestId : typeof subject === "string" ? subject : "flash-worker";
  const extra = Object.keys(fields).length > 0 ? ` | ${JSON.stringify(fields)}` : "";
  const stamp = new Date(typeof time === "number" ? time : Date.now()).toISOString();
  return `${stamp} | ${label} | ${who} | ${message}${extra}\n`;
}

function wrap(instance: pino.Logger, level: LogLevel): Logger {
  const call =
    (name: "trace" | "debug" | "info" | "warn" | "error") =>
    (message: string, fields?: Record<string, unknown>) => {
      if (fields) instance[name](fields, message);
      else instance[name](message);
    };
  return {
    trace: call("trace"),
    debug: call("debug"),
    info: call("info"),
    warn: call("warn"),
    error: call("error"),
    child: (bindings) => wrap(instance.child(bindings), level),
    level,
  };
}

/** stdout whose reader went away (EPIPE) is dropped, instead of every failed write logging another error. */
let stdoutGone = false;
const stdout = {
  write(line: string): void {
    if (stdoutGone) return;
    if (process.stdout.listenerCount("error") === 0) {
      process.stdout.on("error", (err: NodeJS.ErrnoException) => {
        if (err.code === "EPIPE" || err.code === "ERR_STREAM_DESTROYED") stdoutGone = true;
      });
    }
    process.stdout.write(line);
  },
};

export function createLogger(options: LoggerOptions): Logger {
  const out = options.destination ?? stdout;
  // pino writes JSON records; reshaping them here keeps formatting out of call sites.
  const write = (raw: string) => {
    for (const line of raw.split("\n")) {
      if (line.length > 0) out.write(formatRecord(JSON.parse(line) as Record<string, unknown>, options.json));
    }
  };
  const instance = pino({ level: PINO_LEVEL[options.level], base: undefined }, { write });
  return wrap(instance, options.level);
}
