// Load-balanced mode: every request no TS route declares goes to the model server, bodies streamed both ways, and
// so does every WebSocket no TS socket route declares.
import {
  Agent,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { Duplex } from "node:stream";
import type { ModelServer } from "../../app/model-server/declare.js";
import { forwardRawHeaders, refuseUpgrade, tunnelUpgrade } from "../../http/proxy.js";
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
  const { name } = server.settings;
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
    // Read now, not at setup: with `port: 0` it is known once the server has been started.
    const port = server.port;
    // Raw arrays both ways: node:http sends them as they are, with no header object built or set one by one
    // (docs/benchmarks.md, "The load-balanced relay").
    const headers = forwardRawHeaders(req.rawHeaders);
    headers.push("host", `127.0.0.1:${port}`);
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: req.method,
        path: url,
        headers,
        agent,
      },
      (answer) => {
        clearTimeout(timer);
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, forwardRawHeaders(answer.rawHeaders));
        // Each piece goes out as it arrives (pipe does not buffer); an event stream's headers go at once, so the
        // client sees the answer start before the first token. Other answers' headers ride with their body.
        if (isEventStream(answer.rawHeaders)) res.flushHeaders();
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
      // A reset because the server died is told as its exit (code or signal), not as "socket hang up".
      void exitCause(server).then((cause) => {
        if (res.headersSent || res.destroyed) return;
        const error = cause ?? `Model server '${name}' did not answer: ${err.message}`;
        options.log.warn(`${req.method} ${url} answered 502: ${error}`);
        json(res, 502, { error });
      });
    });
    // The client went away before the answer ended: the server sees the disconnect and stops generating.
    res.on("close", () => {
      clearTimeout(timer);
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  };
}

/** Whether raw headers say text/event-stream (read without building the message's header object). */
function isEventStream(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.length === 12 && raw[i]!.toLowerCase() === "content-type")
      return raw[i + 1]!.trimStart().toLowerCase().startsWith("text/event-stream");
  }
  return false;
}

/** "Model server 'llm' exited with code 3 while serving this request; …" if it has exited or does within a moment. */
async function exitCause(server: ModelServer): Promise<string | undefined> {
  return (await server.exitError(" while serving this request"))?.message;
}

/**
 * WebSockets to the model server (ComfyUI's progress socket, a realtime API): an upgrade no TS socket route
 * declares is tunnelled to the server's port; a declared one goes to the listeners that were there before
 * (@fastify/websocket's). Until the server is ready, upgrades are refused with 503, as requests are.
 */
export function proxyUpgrades(
  http: Server,
  server: ModelServer,
  options: { ready(): boolean; declared(path: string): boolean; endpoint: string },
): void {
  const before = http.listeners("upgrade") as ((
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
  ) => void)[];
  http.removeAllListeners("upgrade");
  http.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (options.declared(path)) {
      for (const listener of before) listener.call(http, req, socket, head);
      return;
    }
    if (!options.ready()) {
      refuseUpgrade(
        socket,
        503,
        `Endpoint '${options.endpoint}' is waiting for its model server '${server.settings.name}'`,
      );
      return;
    }
    tunnelUpgrade(req, socket, head, server.port);
  });
}
