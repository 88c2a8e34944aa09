// A WebSocket as the worker's routes and the client see it: the peer's messages to iterate, send and close.

/** What messageSocket() uses of a `ws` WebSocket (its own types stay out of the published declarations). */
interface WsConnection {
  on(event: "message", listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): unknown;
  once(event: "close", listener: () => void): unknown;
  send(message: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
}

/** One WebSocket connection: iterate it for the peer's messages (text as strings, binary as bytes). */
export interface MessageSocket extends AsyncIterable<string | Uint8Array> {
  send(message: string | Uint8Array): void;
  /** Ends the connection (1000: normal closure). */
  close(code?: number, reason?: string): void;
}

/** Wraps a ws connection: messages queue up until read; the iteration ends when the connection closes. */
export function messageSocket(ws: WsConnection): MessageSocket {
  const queue: (string | Uint8Array)[] = [];
  let closed = false;
  let wake: (() => void) | undefined;
  ws.on("message", (data, isBinary) => {
    const bytes = Buffer.isBuffer(data)
      ? data
      : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]);
    queue.push(isBinary ? new Uint8Array(bytes) : bytes.toString("utf8"));
    wake?.();
  });
  ws.once("close", () => {
    closed = true;
    wake?.();
  });
  return {
    send: (message) => ws.send(message),
    close: (code = 1000, reason) => ws.close(code, reason),
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const next = queue.shift();
        if (next !== undefined) yield next;
        else if (closed) return;
        else await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}
