// Load-balanced mode: every request no TS route declares goes to the model server, bodies streamed both ways, and
// so does every WebSocket no TS socket route declares.
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { type Duplex, Readable } from "node:stream";
import type { Dispatcher, Pool } from "undici";
import type { ModelServer } from "../../app/model-server/declare.js";
import { isHopHeader, refuseUpgrade, tunnelUpgrade } from "../../http/proxy.js";
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

type Undici = typeof import("undici");

/**
 * The model server's connections: kept alive, as many as requests in flight, and no timeouts of undici's own
 * (300 s each by default): a generation may take longer, and the endpoint's execution timeout is the relay's.
 */
const POOL_OPTIONS: Pool.Options = { headersTimeout: 0, bodyTimeout: 0 };

/**
 * The server's request handler in front of fastify's: a request that `declared` says a TS route (or /ping) answers
 * goes to fastify; every other one is relayed to the model server as it arrives and its answer as it comes,
 * chunk by chunk (SSE too), without fastify's request and reply objects. The hop to the model server is undici's
 * (a Pool and its dispatch(), the answer written to the client's response as it is parsed): less CPU per request
 * than node:http's client (docs/benchmarks-history.md, issue 46's relay, "Then onto undici").
 */
export function proxyFirst(
  server: ModelServer,
  options: ProxyOptions & { declared(method: string, path: string): boolean },
  next: RawHandler,
): RawHandler {
  const { name } = server.settings;
  // Only an endpoint with a model server pays undici's import (docs/design.md §4.8), while its server loads.
  const loading = import("undici");
  let undici: Undici | undefined;
  loading.then(
    (loaded) => {
      undici = loaded;
    },
    () => {},
  );
  let pool: Pool | undefined;
  let poolPort = 0;
  // Read per request, not at setup: with `port: 0` it is known once the server has been started.
  const poolFor = (loaded: Undici): Pool => {
    if (pool === undefined || poolPort !== server.port) {
      void pool?.close().catch(() => {});
      poolPort = server.port;
      pool = new loaded.Pool(`http://127.0.0.1:${poolPort}`, POOL_OPTIONS);
    }
    return pool;
  };
  const relay = (loaded: Undici, req: IncomingMessage, res: ServerResponse, url: string) => {
    const exchange = new Exchange(req, res, url, server, options);
    if (res.destroyed) return;
    const { headers, body } = requestHead(req.rawHeaders);
    poolFor(loaded).dispatch(
      {
        path: url,
        method: req.method ?? "GET",
        headers,
        // undici sends a stream that has already ended with its length: a chunked body goes through a stream of
        // its own, which has not, so it is sent chunked, as it came.
        body: body === "length" ? req : body === "chunked" ? Readable.from(req) : null,
      },
      exchange,
    );
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
    if (undici) return relay(undici, req, res, url);
    // The first requests may come before the import ends (a server that loads faster than undici does).
    loading.then(
      (loaded) => relay(loaded, req, res, url),
      (err: Error) => {
        options.log.warn(`${req.method} ${url} answered 502: ${err.message}`);
        json(res, 502, { error: `Model server '${name}' could not be called: ${err.message}` });
      },
    );
  };
}

/** Why the relay ends an upstream request itself: the client went away, or the execution timeout passed. */
const CLIENT_GONE = "The client went away";

/**
 * One request relayed: undici's handler of the model server's answer, which it writes to the client's response.
 * The handler is undici 7's own interface, the one its Request calls (typed deprecated in favour of
 * onResponseStart & co., which undici adapts onto it per request, parsing the headers into an object unused here).
 */
class Exchange implements Dispatcher.DispatchHandler {
  private abort: ((err?: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  /** Set once the client has an answer from the relay itself (504) or went away: upstream's fate is not told. */
  private over = false;
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly url: string,
    private readonly server: ModelServer,
    private readonly options: ProxyOptions,
  ) {
    const { timeout } = options;
    if (timeout && timeout.ms > 0) this.timer = setTimeout(() => this.timedOut(timeout.message), timeout.ms);
    // The client went away before the answer ended: the server sees the disconnect and stops generating.
    res.on("close", () => {
      clearTimeout(this.timer);
      if (res.writableFinished) return;
      this.over = true;
      this.abort?.(new Error(CLIENT_GONE));
    });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abort = abort;
    if (this.over) abort(new Error(CLIENT_GONE));
  }

  onHeaders(statusCode: number, raw: Buffer[], resume: () => void, statusMessage: string): boolean {
    // 1xx informational answers (103 Early Hints) are the hop's, as node:http's client treats them.
    if (statusCode < 200 || this.over) return true;
    clearTimeout(this.timer);
    this.resume = resume;
    const headers: string[] = [];
    let eventStream = false;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!.toString("latin1");
      if (isHopHeader(name)) continue;
      const value = raw[i + 1]!.toString("latin1");
      if (name.length === 12 && name.toLowerCase() === "content-type")
        eventStream = value.trimStart().toLowerCase().startsWith("text/event-stream");
      headers.push(name, value);
    }
    this.res.writeHead(statusCode, statusMessage, headers);
    // Each piece goes out as it arrives; an event stream's headers go at once, so the client sees the answer start
    // before the first token. Other answers' headers ride with their body.
    if (eventStream) this.res.flushHeaders();
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.over || this.res.write(chunk)) return true;
    // The client reads slower than the server writes: the server's socket waits (backpressure), nothing piles up.
    this.res.once("drain", this.resume!);
    return false;
  }

  onComplete(): void {
    if (!this.over) this.res.end();
  }

  onError(err: Error): void {
    clearTimeout(this.timer);
    if (this.over) return;
    const { res, req, url, server, options } = this;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A reset because the server died is told as its exit (code or signal), not as "socket hang up".
    void exitCause(server).then((cause) => {
      if (res.headersSent || res.destroyed) return;
      const error = cause ?? `Model server '${server.settings.name}' did not answer: ${errorText(err)}`;
      options.log.warn(`${req.method} ${url} answered 502: ${error}`);
      json(res, 502, { error });
    });
  }

  private timedOut(message: string): void {
    if (this.over || this.res.headersSent) return;
    this.over = true;
    this.options.log.warn(`${this.req.method} ${this.url} answered 504: ${message}`);
    json(this.res, 504, { error: message });
    this.abort?.(new Error(message));
  }
}

/**
 * The request's headers as the model server gets them (case and order kept, a name's repeats together in their
 * order, the hop's dropped, and Expect, which this server already answered with 100 Continue), and how its body
 * is framed. Content-Length is undici's to write (lowercase, after the others: it frames the body it sends).
 * An object, not undici's flat array form: given the array, the relay spent 3–4× as long in V8's scavenges (its
 * objects outlived more of them), a tenth of its CPU (docs/benchmarks-history.md, issue 46's relay, "Then onto
 * undici").
 */
function requestHead(raw: readonly string[]): {
  headers: Record<string, string | string[]>;
  body: "none" | "length" | "chunked";
} {
  // No prototype: a header named __proto__ is a header like another.
  const headers: Record<string, string | string[]> = Object.create(null);
  let body: "none" | "length" | "chunked" = "none";
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const value = raw[i + 1]!;
    const length = name.length;
    if (length === 14 && name.toLowerCase() === "content-length") {
      if (value !== "0") body = "length";
    } else if (length === 17 && name.toLowerCase() === "transfer-encoding") body = "chunked";
    else if (length === 6 && name.toLowerCase() === "expect") continue;
    if (isHopHeader(name)) continue;
    const before = headers[name];
    if (before === undefined) headers[name] = value;
    else if (typeof before === "string") headers[name] = [before, value];
    else before.push(value);
  }
  return { headers, body };
}

/** What a broken-off hop says: node:http's words for undici's, as this relay said before undici carried it. */
function errorText(err: Error): string {
  return (err as { code?: string }).code === "UND_ERR_SOCKET" && err.message === "other side closed"
    ? "socket hang up"
    : err.message;
}

function json(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers });
  res.end(JSON.stringify(body));
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
