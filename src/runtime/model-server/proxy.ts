// Load-balanced mode: every request no TS route declares goes to the model server, bodies streamed both ways.
import {
  Agent,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { ModelServer } from "../../app/model-server/declare.js";
import type { Logger } from "../../log/index.js";

export interface ProxyOptions {
  log: Logger;
  /** The endpoint's execution timeout: a server that has not begun its answer by then gets a 504 (0: none). */
  timeout?: { ms: number; message: string };
  /** False while the server loads (the request is answered 503 with Retry-After) or once the worker stops. */
  ready(): boolean;
  /** The endpoint's name, for the answers the proxy gives itself. */
  endpoint: string;
}

/** Connection-level headers (RFC 9110 §7.6.1) stay on their own hop. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function forward(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

/** Handles one raw request: relays it, or passes it to `next` (fastify) when a TS route or /ping declares it. */
export type RawHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The server's request handler in front of fastify's: a request that `declared` says a TS route (or /ping) answers
 * goes to fastify; every other one is relayed to the model server as it arrives and its answer as it comes,
 * chunk by chunk (SSE too), without fastify's request and reply objects: a third less CPU per proxied request.
 */
export function proxyFirst(
  server: ModelServer,
  options: ProxyOptions & { declared(method: string, path: string): boolean },
  next: RawHandler,
): RawHandler {
  const agent = new Agent({ keepAlive: true });
  const { port, name } = server.settings;
  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
    res.end(JSON.stringify(body));
  };
  return (req, res) => {
    const url = req.url ?? "/";
    const query = url.indexOf("?");
    if (options.declared(req.method ?? "GET", query < 0 ? url : url.slice(0, query))) return next(req, res);
    if (!options.ready()) {
      // Nothing of the request is read: the connection closes after this answer.
      json(
        res,
        503,
        { error: `Endpoint '${options.endpoint}' is waiting for its model server '${name}'` },
        {
          "retry-after": "1",
          connection: "close",
        },
      );
      return;
    }
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: req.method,
        path: url,
        headers: { ...forward(req.headers), host: `127.0.0.1:${port}` },
        agent,
      },
      (answer) => {
        clearTimeout(timer);
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, forward(answer.headers));
        // Each piece goes out as it arrives (pipe does not buffer); an event stream's headers go at once, so the
        // client sees the answer start before the first token. Other answers' headers ride with their body.
        if (answer.headers["content-type"]?.startsWith("text/event-stream")) res.flushHeaders();
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      },
    );
    const { timeout } = options;
    const timer =
      timeout && timeout.ms > 0
        ? setTimeout(() => {
            options.log.warn(`${req.method} ${url} answered 504: ${timeout.message}`);
            json(res, 504, { error: timeout.message });
            upstream.destroy();
          }, timeout.ms)
        : undefined;
    upstream.on("error", (err) => {
      clearTimeout(timer);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      options.log.warn(`${req.method} ${url}: model server '${name}' did not answer: ${err.message}`);
      json(res, 502, { error: `Model server '${name}' did not answer: ${err.message}` });
    });
    // The client went away before the answer ended: the server sees the disconnect and stops generating.
    res.on("close", () => {
      clearTimeout(timer);
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };
}
