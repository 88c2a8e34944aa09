// The platform log as the console sees it: every line the platform writes (its own, and its workers' output
// relayed under their ids) is also kept in a ring, so the page can show a worker's recent lines and follow new ones.
import { type LogBindings, type Logger, redact } from "../../log/index.js";
import type { LogLevelName, LogLine } from "./wire.js";

export const LOG_RING_SIZE = 5_000;
/** The platform's own cut (log MAX_MESSAGE_LENGTH). */
const MAX_MESSAGE = 4_096;
const WORKER_PREFIX = /^Worker:([^\s|]+) \|/;

export class LogBook {
  private readonly ring: LogLine[] = [];
  private next = 0;
  private seq = 0;
  private readonly listeners = new Set<(line: LogLine) => void>();

  constructor(
    readonly size = LOG_RING_SIZE,
    private readonly now: () => number = Date.now,
  ) {}

  add(level: LogLevelName, message: string, bindings: LogBindings): void {
    const line: LogLine = {
      seq: ++this.seq,
      time: this.now(),
      level,
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message,
    };
    if (bindings.subject !== undefined) line.subject = bindings.subject;
    if (bindings.requestId !== undefined) line.jobId = bindings.requestId;
    const worker = WORKER_PREFIX.exec(message)?.[1];
    if (worker !== undefined) line.workerId = worker;
    if (this.ring.length < this.size) this.ring.push(line);
    else this.ring[this.next] = line;
    this.next = (this.next + 1) % this.size;
    for (const listener of this.listeners) listener(line);
  }

  /** The newest `limit` lines that match, oldest first. */
  recent(match: (line: LogLine) => boolean, limit: number): LogLine[] {
    const out: LogLine[] = [];
    const n = this.ring.length;
    for (let i = 1; i <= n && out.length < limit; i++) {
      const line = this.ring[(this.next - i + n) % n];
      if (line && match(line)) out.push(line);
    }
    return out.reverse();
  }

  onLine(listener: (line: LogLine) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Lines about a worker: its own output (subject) and the platform's `Worker:<id> | ...` lines; all when no id. */
export function workerFilter(workerId: string | undefined): (line: LogLine) => boolean {
  if (!workerId) return () => true;
  return (line) => line.subject === workerId || line.workerId === workerId;
}

/** A logger that writes to `inner` and keeps a copy of each line in the book, whatever the output level. */
export function teeLogger(inner: Logger, book: LogBook, bindings: LogBindings = {}): Logger {
  const call =
    (level: LogLevelName) =>
    (message: string, fields?: Record<string, unknown>): void => {
      book.add(level, redact(message), bindings);
      inner[level](message, fields);
    };
  return {
    trace: call("trace"),
    debug: call("debug"),
    info: call("info"),
    warn: call("warn"),
    error: call("error"),
    child: (more) => teeLogger(inner.child(more), book, { ...bindings, ...more }),
    level: inner.level,
  };
}
