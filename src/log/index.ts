// The one logger: runpod-python's levels and line formats (text for people, JSON lines for the platform), and
// LOG_FORMAT=json's pino records (log/json.ts). Not pino by default: its import is a cost every worker would pay
// (docs/design.md §4.9 gives it), so it is loaded only for LOG_FORMAT=json.
import type { Logger as PinoLogger } from "pino";

import { redact } from "./redact.js";
import { stdoutLines } from "./stdout.js";

export { describeError } from "./describe.js";
export { addSecret, redact, redactUrl } from "./redact.js";
export { flushLog, stdoutToStderr, tapStdio } from "./stdout.js";
export { activeTraceId, setTraceIdSource } from "./trace.js";

/** LOG_FORMAT: runpod-python's text lines (the default), or one JSON object per line written by pino. */
export type LogFormat = "text" | "json";

/** The levels users name in LOG_LEVEL; "SILENT" turns logging off (runpod-python's NOTSET). */
export type LogLevel = "TRACE" | "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";

/** What a log line is about: a job id, or a component such as "worker" or "heartbeat". */
export interface LogBindings {
  requestId?: string;
  subject?: string;
  batchId?: string;
}

/** The logger handlers and the runtime write to; child loggers carry bindings, so call sites never format ids. */
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
  /** "json": pino's JSON records (LOG_FORMAT=json), which replace both the text and the platform's lines. */
  format?: LogFormat;
  /** Where lines go; stdout by default, like runpod-python (gathered per turn of the event loop: log/stdout.ts). */
  destination?: { write(line: string): unknown };
}

/** Messages longer than this are cut in the middle (runpod-python rp_logger, docs/protocol.md §7.1). */
export const MAX_MESSAGE_LENGTH = 4096;

const RANK: Record<LogLevel, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50, SILENT: 100 };

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

/** Turns one record (level number, time, msg, bindings, fields) into the line written: text, or JSON for the platform. */
export function formatRecord(record: Record<string, unknown>, json: boolean): string {
  const { level, time, msg, requestId, subject, batchId, ...fields } = record;
  const label = LEVEL_LABEL[level as number] ?? String(level);
  let message = typeof msg === "string" ? msg : "";
  if (typeof batchId === "string") message = `[batchId=${batchId}] ${message}`;
  message = truncateMessage(message);
  if (json) {
    return `${safeJson({ requestId: typeof requestId === "string" ? requestId : null, level: label, message, ...fields })}\n`;
  }
  const who =
    typeof requestId === "string" ? requestId : typeof subject === "string" ? subject : "flash-worker";
  // Fields left undefined are dropped, as JSON drops them.
  const extraJson = Object.keys(fields).length > 0 ? safeJson(fields) : "{}";
  const extra = extraJson === "{}" ? "" : ` | ${extraJson}`;
  const stamp = new Date(typeof time === "number" ? time : Date.now()).toISOString();
  return `${stamp} | ${label} | ${who} | ${message}${extra}\n`;
}

/** JSON that never throws from a log call: cycles become "[Circular]", bigints strings, errors their name and message. */
function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    const seen = new WeakSet<object>();
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (v instanceof Error) return { type: v.name, message: v.message };
      if (typeof v === "object" && v !== null) {
        if (seen.has(v)) return "[Circular]";
        seen.add(v);
      }
      return v;
    });
  }
}

class LineLogger implements Logger {
  /** The text line's " | <who> | " part and the JSON line's requestId, fixed per child (two lines a job). */
  private readonly who: string;
  private readonly requestIdJson: string;
  private readonly batchPrefix: string;
  /** Bindings beyond these three are written as fields: formatRecord() then. */
  private readonly plain: boolean;

  constructor(
    private readonly out: { write(line: string): unknown },
    private readonly json: boolean,
    readonly level: LogLevel,
    private readonly bindings: LogBindings,
  ) {
    const { requestId, subject, batchId } = bindings;
    this.who =
      typeof requestId === "string" ? requestId : typeof subject === "string" ? subject : "flash-worker";
    this.requestIdJson = typeof requestId === "string" ? JSON.stringify(requestId) : "null";
    this.batchPrefix = typeof batchId === "string" ? `[batchId=${batchId}] ` : "";
    this.plain = Object.keys(bindings).every((k) => k === "requestId" || k === "subject" || k === "batchId");
  }

  private line(level: number, message: string, fields: Record<string, unknown> | undefined): void {
    if (level < RANK[this.level]) return;
    if (fields !== undefined || !this.plain) {
      const record = { ...this.bindings, ...fields, level, time: Date.now(), msg: message };
      this.out.write(redact(formatRecord(record, this.json)));
      return;
    }
    // No fields: the line formatRecord() would write, without building a record (two per job).
    const label = LEVEL_LABEL[level] as string;
    const text = truncateMessage(this.batchPrefix + (typeof message === "string" ? message : ""));
    this.out.write(
      redact(
        this.json
          ? `{"requestId":${this.requestIdJson},"level":"${label}","message":${JSON.stringify(text)}}\n`
          : `${new Date().toISOString()} | ${label} | ${this.who} | ${text}\n`,
      ),
    );
  }

  trace(message: string, fields?: Record<string, unknown>): void {
    this.line(RANK.TRACE, message, fields);
  }
  debug(message: string, fields?: Record<string, unknown>): void {
    this.line(RANK.DEBUG, message, fields);
  }
  info(message: string, fields?: Record<string, unknown>): void {
    this.line(RANK.INFO, message, fields);
  }
  warn(message: string, fields?: Record<string, unknown>): void {
    this.line(RANK.WARN, message, fields);
  }
  error(message: string, fields?: Record<string, unknown>): void {
    this.line(RANK.ERROR, message, fields);
  }
  child(bindings: LogBindings): Logger {
    return new LineLogger(this.out, this.json, this.level, { ...this.bindings, ...bindings });
  }
}

export function createLogger(options: LoggerOptions): Logger {
  return new LineLogger(options.destination ?? stdoutLines, options.json, options.level, {});
}

/** The pino logger behind a Logger in LOG_FORMAT=json (a symbol shared by every copy of this package). */
export const PINO: unique symbol = Symbol.for("flash-worker.pino");

/**
 * The process's logger: pino's JSON lines when `format` is "json" (pino is imported only then), else the
 * text or platform lines of createLogger().
 */
export async function openLogger(options: LoggerOptions): Promise<Logger> {
  if (options.format !== "json") return createLogger(options);
  const { createJsonLogger } = await import("./json.js");
  return createJsonLogger(options);
}

/**
 * The pino logger behind `log` (e.g. a handler's `job.log`, a child bound to the job's id) when the worker runs
 * with LOG_FORMAT=json; undefined with the default text lines, where pino is not loaded.
 */
export function pinoLogger(log: Logger): PinoLogger | undefined {
  return (log as { [PINO]?: PinoLogger })[PINO];
}
