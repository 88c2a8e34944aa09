// One Server-Sent Events response: named events with JSON data, keep-alive comments, and a slow reader cut off.
import type { FastifyReply } from "fastify";

/** A reader this far behind is dropped; its page reconnects and starts again from a snapshot. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/** Proxies and browsers keep an idle stream open when something arrives this often. */
const KEEP_ALIVE_MS = 15_000;

export class SseStream {
  private readonly keepAlive: NodeJS.Timeout;
  private readonly closeListeners = new Set<() => void>();
  closed = false;

  constructor(private readonly reply: FastifyReply) {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    res.once("close", () => this.close());
    this.keepAlive = setInterval(() => this.write(": keep-alive\n\n"), KEEP_ALIVE_MS);
    this.keepAlive.unref();
  }

  /** `event: <name>` with the value as one JSON data line. */
  send(event: string, data: unknown): void {
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** A pre-serialized event, so one delta is stringified once for every reader. */
  sendRaw(text: string): void {
    this.write(text);
  }

  onClose(listener: () => void): void {
    if (this.closed) listener();
    else this.closeListeners.add(listener);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepAlive);
    const res = this.reply.raw;
    if (!res.writableEnded) res.end();
    for (const listener of this.closeListeners) listener();
    this.closeListeners.clear();
  }

  private write(text: string): void {
    if (this.closed) return;
    const res = this.reply.raw;
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      res.destroy();
      this.close();
      return;
    }
    res.write(text);
  }
}

export const sseEvent = (event: string, data: unknown): string =>
  `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
