// HTTP/1.1 written straight onto kept-alive sockets, for the worker's calls to the platform (job-take, results, stream
// chunks, progress, pings). Why not node:http there: its request and answer objects, agent and parser cost a bare
// take → done loop ~0.16 ms of CPU per job on Node 20, three quarters of the loop (docs/benchmarks-history.md,
// issue 29), and undici's request() is no cheaper than node:http and costs its import (docs/design.md §4.8).
// Whole-body exchanges only, over plain or TLS sockets; a URL the fast path does not take goes to node:http
// (wire.ts), as do streams.
import net from "node:net";
import type tls from "node:tls";
import { AnswerParser, MalformedAnswerError, type ParsedAnswer } from "./h1-answer.js";
import { type Origin, targetOf } from "./target.js";
import {
  abortReason,
  IDLE_CONNECTION_MS,
  nodeTransport,
  type Transport,
  type WireAnswer,
  type WireRequest,
  type WireResponse,
  WireTimeoutError,
} from "./wire.js";

/** What node:http refuses in a header value (its checkInvalidHeaderChar): controls but tab, and DEL. */
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** A header name must be an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const NON_ASCII = /[\u0080-\uffff]/;
const PLAIN_METHOD = /^[A-Z]+$/;

/** The error of an answer the server broke off or never sent, as node:http names it. */
function hangUp(): Error {
  return Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
}

/** Whether `chunk` holds only CR and LF, which llhttp skips between answers. */
function lineBreaksOnly(chunk: Buffer): boolean {
  for (const byte of chunk) if (byte !== 13 && byte !== 10) return false;
  return true;
}

/** node:https's request, loaded on the first https URL: a worker on a plain-http platform never loads TLS. */
let connectTls: typeof tls.connect | undefined;

/** The last TLS session each https origin gave, to resume on the next connection. */
const sessions = new Map<string, Buffer>();

/** Idle connections by origin ("https://host:port"), the most recently used last. */
const idle = new Map<string, Connection[]>();

/** The exchange in flight: its promise's ends. */
interface Reading {
  resolve(answer: WireAnswer): void;
  reject(error: unknown): void;
}

class Connection {
  private readonly parser = new AnswerParser((answer) => this.onAnswer(answer));
  private reading: Reading | undefined;
  /** The final answer to the exchange in flight, handed over at the end of the read that completed it. */
  private answer: ParsedAnswer | undefined;
  /** Another answer began after it (node:http then drops the connection): this one is not used again. */
  private extra = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private idleMs = 0;
  broken = false;

  constructor(
    readonly key: string,
    readonly socket: net.Socket,
  ) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("error", (err) => this.fail(err));
    socket.on("close", () => this.fail(hangUp()));
    socket.on("end", () => this.onEnd());
  }

  /** Sends one request on this connection and reads its answer. */
  exchange(method: string, head: string, body: string | undefined): Promise<WireAnswer> {
    this.socket.ref();
    return new Promise<WireAnswer>((resolve, reject) => {
      this.reading = { resolve, reject };
      this.answer = undefined;
      this.extra = false;
      this.parser.expect(method);
      if (!NON_ASCII.test(head)) this.socket.write(body === undefined ? head : head + body);
      else {
        // Header values go out in latin1, as node:http sends them, with a body or without (a GET's went out as UTF-8).
        this.socket.cork();
        this.socket.write(head, "latin1");
        if (body !== undefined) this.socket.write(body);
        this.socket.uncork();
      }
    });
  }

  /** Ends the exchange in flight, if any, and closes the connection. */
  destroy(): void {
    this.broken = true;
    this.reading = undefined;
    this.socket.destroy();
  }

  private fail(error: unknown): void {
    this.broken = true;
    this.forget();
    const reading = this.reading;
    this.reading = undefined;
    reading?.reject(error);
    this.socket.destroy();
  }

  private onEnd(): void {
    // A body read until the connection closes ends here.
    if (this.reading && !this.answer && this.parser.end()) {
      this.broken = true;
      this.finish();
      return;
    }
    this.fail(hangUp());
  }

  private onData(chunk: Buffer): void {
    if (!this.reading) {
      // CR and LF between answers are skipped (llhttp's leniency); other bytes nobody asked for end the connection.
      if (!lineBreaksOnly(chunk)) this.fail(hangUp());
      return;
    }
    try {
      // The whole read, as node:http reads it: bytes after the answer are parsed too, and a fault in them fails it.
      this.parser.feed(chunk);
    } catch (err) {
      this.fail(err);
      return;
    }
    if (this.answer) this.finish();
  }

  /** Each whole answer on the connection: informational ones skipped, the first final one kept. */
  private onAnswer(answer: ParsedAnswer): void {
    if (this.answer || !this.reading) {
      this.extra = true;
      return;
    }
    const { status } = answer;
    // 100 Continue, 103 Early Hints…: the real answer follows (101 is a final answer to node:http).
    if (status >= 100 && status < 200 && status !== 101) return;
    if (answer.switched && answer.upgrade) {
      throw new MalformedAnswerError(
        "HPE_PAUSED_UPGRADE",
        "101 Switching Protocols to an upgrade nobody asked for",
      );
    }
    this.answer = answer;
    // Whatever follows answers nobody: read with a body whatever the request's method.
    this.parser.method = "";
  }

  /** The answer is whole and nothing after it in the same read was malformed: hand it over, park or close. */
  private finish(): void {
    const reading = this.reading!;
    const answer = this.answer!;
    this.reading = undefined;
    this.answer = undefined;
    const { body, status, statusText, headers } = answer;
    const text =
      body.length === 0
        ? ""
        : body.length === 1
          ? body[0]!.toString("utf8")
          : Buffer.concat(body).toString("utf8");
    const response: WireResponse = {
      ok: status >= 200 && status < 300,
      status,
      statusText,
      headers: {
        get(name: string): string | null {
          return headers[name.toLowerCase()] ?? null;
        },
      },
    };
    const keepAliveMs = keepAliveHint(headers["keep-alive"]);
    const reusable = answer.keepAlive && !answer.switched && !this.extra && this.parser.between;
    if (!this.broken && reusable && keepAliveMs > 0) this.park(keepAliveMs);
    else {
      this.broken = true;
      this.forget();
      this.socket.destroy();
    }
    reading.resolve({ response, text });
  }

  /** Back among the idle connections, closed after `ms` unused; it keeps no process alive. */
  private park(ms: number): void {
    this.socket.unref();
    const list = idle.get(this.key);
    if (list) list.push(this);
    else idle.set(this.key, [this]);
    // One timer for the connection's life, pushed back at each park; a connection in use when it fires stays.
    if (this.idleTimer && ms === this.idleMs) this.idleTimer.refresh();
    else {
      if (this.idleTimer) clearTimeout(this.idleTimer);
      this.idleMs = ms;
      this.idleTimer = setTimeout(() => {
        if (this.reading) return;
        this.broken = true;
        this.forget();
        this.socket.destroy();
      }, ms);
      this.idleTimer.unref();
    }
  }

  /** Out of the idle list. */
  private forget(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const list = idle.get(this.key);
    const at = list?.indexOf(this) ?? -1;
    if (at >= 0) list!.splice(at, 1);
  }
}

/** The server's idle limit from its Keep-Alive hint, a second early, so a request seldom meets a connection it is closing. */
function keepAliveHint(value: string | undefined): number {
  const hint = value === undefined ? null : /timeout=(\d+)/i.exec(value);
  return hint ? Math.min(IDLE_CONNECTION_MS, Number(hint[1]) * 1000 - 1000) : IDLE_CONNECTION_MS;
}

/** An idle connection to the origin, or a new one. */
function connectionTo(key: string, origin: Origin): Connection {
  const list = idle.get(key);
  while (list && list.length > 0) {
    const connection = list.pop()!;
    if (!connection.broken && !connection.socket.destroyed) return connection;
  }
  const port = origin.port ?? (origin.secure ? 443 : 80);
  // Only a *.localhost host brings its own lookup (loopback); any other host is resolved by the system.
  const options = { host: origin.hostname, port, ...(origin.lookup ? { lookup: origin.lookup } : {}) };
  let socket: net.Socket;
  if (origin.secure) {
    connectTls ??= process.getBuiltinModule("node:tls").connect;
    // The last TLS session to this origin resumed, as node:https's agent does: a new connection skips the full handshake.
    const tlsOptions: tls.ConnectionOptions = {
      ...options,
      ...(net.isIP(origin.hostname) ? {} : { servername: origin.hostname }),
      ALPNProtocols: ["http/1.1"],
    };
    const session = sessions.get(key);
    if (session) tlsOptions.session = session;
    socket = connectTls(tlsOptions);
    socket.on("session", (ticket: Buffer) => sessions.set(key, ticket));
  } else socket = net.connect(options);
  return new Connection(key, socket);
}

/** The request's head, refusing what node:http refuses: a header that could split the request. */
function headOf(request: WireRequest, path: string, host: string): string {
  let head = `${request.method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n`;
  for (const name in request.headers) {
    const value = request.headers[name]!;
    if (!TOKEN.test(name)) {
      throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), {
        code: "ERR_INVALID_HTTP_TOKEN",
      });
    }
    if (INVALID_VALUE.test(value)) {
      throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), {
        code: "ERR_INVALID_CHAR",
      });
    }
    head += `${name}: ${value}\r\n`;
  }
  if (request.body !== undefined) head += `Content-Length: ${Buffer.byteLength(request.body)}\r\n`;
  return `${head}\r\n`;
}

/** Whether the caller set a header the fast path sets itself (Host, Connection, framing): node:http sends those. */
function setsFraming(headers: Record<string, string>): boolean {
  for (const name in headers) {
    const lower = name.toLowerCase();
    if (
      lower === "host" ||
      lower === "connection" ||
      lower === "content-length" ||
      lower === "transfer-encoding"
    )
      return true;
  }
  return false;
}

/** The platform's transport: HTTP/1.1 on kept-alive sockets, node:http for what it does not take. */
export const h1Transport: Transport = (request) => {
  const target = targetOf(request.url);
  // node:http upper-cases other methods, or refuses them (a space or CRLF would split the request).
  if (!target || !PLAIN_METHOD.test(request.method) || setsFraming(request.headers))
    return nodeTransport(request);
  const { origin, path } = target;
  const { signal, timeoutMs } = request;
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  let head: string;
  try {
    const port = origin.port;
    const defaultPort = origin.secure ? 443 : 80;
    const host = origin.hostname.includes(":") ? `[${origin.hostname}]` : origin.hostname;
    head = headOf(request, path, port === undefined || port === defaultPort ? host : `${host}:${port}`);
  } catch (err) {
    return Promise.reject(err);
  }
  const key = `${origin.protocol}//${origin.hostname}:${origin.port ?? ""}`;
  const connection = connectionTo(key, origin);
  const exchange = connection.exchange(request.method, head, request.body);
  if (!signal && timeoutMs === undefined) return exchange;
  return new Promise<WireAnswer>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      reject(abortReason(signal!));
      connection.destroy();
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        reject(new WireTimeoutError(timeoutMs));
        connection.destroy();
      }, timeoutMs);
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    exchange.then(
      (answer) => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        resolve(answer);
      },
      (err: unknown) => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
};

/** Which transport the worker's calls to the platform go over: FLASH_HTTP_TRANSPORT (docs/design.md §4.8). */
export type PlatformTransport = "h1" | "node";

/** Our HTTP/1.1 by default; node:http when FLASH_HTTP_TRANSPORT=node, the switch back should h1 ever misread a platform. */
export function platformTransport(kind: PlatformTransport = "h1"): Transport {
  return kind === "node" ? nodeTransport : h1Transport;
}
