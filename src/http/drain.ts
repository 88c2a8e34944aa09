// Reading a refused request body to its end, so the client gets the answer instead of a reset connection.
import type { IncomingMessage } from "node:http";

/** Bodies past this are not read to the end: the connection is closed instead. */
const DRAIN_LIMIT_BYTES = 256 * 1024 * 1024;

/**
 * Reads and discards the rest of a request body before answering it (e.g. 413), so a client still
 * sending gets the answer instead of a reset connection (EPIPE).
 */
export function drainRequest(raw: IncomingMessage): Promise<void> {
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let read = 0;
    const done = () => {
      raw.off("data", onData);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > DRAIN_LIMIT_BYTES) {
        raw.destroy();
        done();
      }
    };
    raw.on("data", onData);
    raw.once("end", done);
    raw.once("close", done);
    raw.once("error", done);
    raw.resume();
  });
}
