// Load-balanced mode: every request no TS route declares goes to the model server, bodies streamed both ways.
import { Agent, request as httpRequest, type IncomingHttpHeaders } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "../log/index.js";
import type { ModelServer } from "./declare.js";

export interface ProxyOptions {
  log: Logger;
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

/**
 * Adds a catch-all route (any method, any path) that relays the request to the server as it arrives and its
 * answer as it comes, chunk by chunk (SSE too). Declared routes and /ping are more specific, so they win.
 */
export function proxyToServer(app: FastifyInstance, server: ModelServer, options: ProxyOptions): void {
  const agent = new Agent({ keepAlive: true });
  const { port, name } = server.settings;
  const relay = (request: FastifyRequest, reply: FastifyReply): void => {
    if (!options.ready()) {
      reply
        .code(503)
        .header("retry-after", "1")
        .send({ error: `Endpoint '${options.endpoint}' is waiting for its model server '${name}'` });
      return;
    }
    reply.hijack();
    const res = reply.raw;
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port,
        method: request.method,
        path: request.raw.url,
        headers: { ...forward(request.headers), host: `127.0.0.1:${port}` },
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, forward(answer.headers));
        // Each piece goes out as it arrives (pipe does not buffer); an event stream's headers go at once, so the
        // client sees the answer start before the first token. Other answers' headers ride with their body.
        if (answer.headers["content-type"]?.startsWith("text/event-stream")) res.flushHeaders();
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      },
    );
    upstream.on("error", (err) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      options.log.warn(
        `${request.method} ${request.url}: model server '${name}' did not answer: ${err.message}`,
      );
      res.writeHead(502, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ error: `Model server '${name}' did not answer: ${err.message}` }));
    });
    // The client went away before the answer ended: the server sees the disconnect and stops generating.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    request.raw.pipe(upstream);
  };
  void app.register(async (scope) => {
    // Bodies stay streams: nothing is parsed or buffered on the way to the server.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, payload, done) => done(null, payload));
    scope.all("/", relay);
    scope.all("/*", relay);
  });
}
