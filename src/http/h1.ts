// HTTP/1.1 written straight onto kept-alive sockets, for the worker's calls to the platform (job-take, results, stream
// chunks, progress, pings). Why not node:http there: its request and answer objects, agent and parser cost a bare
// take → done loop ~0.16 ms of CPU per job on Node 20, three quarters of the loop (docs/benchmarks.md, issue 29), and
// undici's request() is no cheaper than node:http while its import costs ~65 ms and ~20 MB. Whole-body exchanges
// only, over plain or TLS sockets; a URL the fast path does not take goes to node:http (wire.ts), as do streams.
import net from "node:net";
import type tls from "node:tls";
import {
  abortReason,
  IDLE_CONNECTION_MS,
  nodeTransport,
  type Origin,
  type Transport,
  targetOf,
  type WireAnswer,
  type WireRequest,
  type WireResponse,
  WireTimeoutError,
} from "./wire.js";

/** An answer's head may be at most this long, as node:http allows (its --max-http-header-size default). */
const MAX_HEAD_BYTES = 16 * 1024;
const CRLF_CRLF = Buffer.from("\r\n\r\n");
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

/** A malformed answer: the connection is not used again. */
function badAnswer(why: string): Error {
  return Object.assign(new Error(`malformed HTTP answer: ${why}`), { code: "HPE_INVALID_RESPONSE" });
}

/** node:https's request, loaded on the first https URL: a worker on a plain-http platform never loads TLS. */
let connectTls: typeof tls.connect | undefined;

/** The last TLS session each https origin gave, to resume on the next connection. */
const sessions = new Map<string, Buffer>();

/** Idle connections by origin ("https://host:port"), the most recently used last. */
const idle = new Map<string, Connection[]>();

/** An answer being read: its head, then its body by length, by chunks, or until the connection closes. */
interface Reading {
  resolve(answer: WireAnswer): void;
  reject(error: unknown): void;
  method: string;
  status: number;
  statusText: string;
  headers: Record<string, string>;
  /** Bytes left of the body (by length), or -1 (chunked), or -2 (until close), once the head is read. */
  left: number;
  /** The chunked body's state: the next thing to read. */
  chunkState: "size" | "data" | "data-end" | "trailers";
  body: Buffer[];
  reusable: boolean;
  keepAliveMs: number;
}

class Connection {
  private pending: Buffer | undefined;
  private reading: Reading | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private idleMs = 0;
  private headDone = false;
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
      this.reading = {
        resolve,
        reject,
        method,
        status: 0,
        statusText: "",
        headers: {},
        left: 0,
        chunkState: "size",
        body: [],
        reusable: true,
        keepAliveMs: IDLE_CONNECTION_MS,
      };
      this.headDone = false;
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
    const reading = this.reading;
    // A body read until the connection closes ends here.
    if (reading && this.headDone && reading.left === -2) {
      this.broken = true;
      this.finish();
      this.socket.destroy();
      return;
    }
    this.fail(hangUp());
  }

  private onData(chunk: Buffer): void {
    const reading = this.reading;
    if (!reading) {
      // Bytes nobody asked for: the connection's framing cannot be trusted any more.
      this.fail(badAnswer("data after the answer"));
      return;
    }
    let data = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = undefined;
    try {
      if (!this.headDone) {
        const end = data.indexOf(CRLF_CRLF);
        if (end < 0) {
          if (data.length > MAX_HEAD_BYTES)
            throw Object.assign(badAnswer("head too large"), { code: "HPE_HEADER_OVERFLOW" });
          this.pending = data;
          return;
        }
        if (end > MAX_HEAD_BYTES)
          throw Object.assign(badAnswer("head too large"), { code: "HPE_HEADER_OVERFLOW" });
        const informational = this.readHead(reading, data.toString("latin1", 0, end));
        data = data.subarray(end + 4);
        if (informational) {
          // 100 Continue and the like: the real answer follows.
          if (data.length > 0) this.onData(data);
          return;
        }
        this.headDone = true;
      }
      this.readBody(reading, data);
    } catch (err) {
      this.fail(err);
    }
  }

  /** Reads the status line and headers; true for a 1xx answer that another follows. */
  private readHead(reading: Reading, head: string): boolean {
    const lines = head.split("\r\n");
    const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0] ?? "");
    if (!status) throw badAnswer(`status line ${JSON.stringify((lines[0] ?? "").slice(0, 100))}`);
    const code = Number(status[2]);
    if (code >= 100 && code < 200) {
      // 101 would switch protocols, which no request here asks for.
      if (code === 101) throw badAnswer("101 Switching Protocols without an upgrade");
      return true;
    }
    // No prototype: an answer's "Constructor" header read Object's constructor (and get("constructor") returned it).
    const headers: Record<string, string> = Object.create(null);
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0) throw badAnswer(`header line ${JSON.stringify(line.slice(0, 100))}`);
      const name = line.slice(0, colon).toLowerCase();
      if (!TOKEN.test(name)) throw badAnswer(`header name ${JSON.stringify(name.slice(0, 100))}`);
      const value = line.slice(colon + 1).trim();
      const seen = headers[name];
      headers[name] = seen === undefined ? value : `${seen}, ${value}`;
    }
    reading.status = code;
    reading.statusText = status[3] ?? "";
    reading.headers = headers;
    const connection = headers.connection?.toLowerCase() ?? "";
    reading.reusable = status[1] === "1" ? !connection.includes("close") : connection.includes("keep-alive");
    const hint = /timeout=(\d+)/i.exec(headers["keep-alive"] ?? "");
    // The server's idle limit, a second early, so a request seldom meets a connection it is closing.
    if (hint) reading.keepAliveMs = Math.min(IDLE_CONNECTION_MS, Number(hint[1]) * 1000 - 1000);
    if (reading.method === "HEAD" || code === 204 || code === 304) reading.left = 0;
    else if (headers["transfer-encoding"] !== undefined) {
      if (!/(?:^|,)\s*chunked\s*$/i.test(headers["transfer-encoding"])) {
        // Another coding last: the body runs until the connection closes (RFC 9112 §6.3).
        reading.left = -2;
        reading.reusable = false;
      } else {
        reading.left = -1;
        // With a Content-Length too, the framing is in doubt (RFC 9112 §6.3): read by chunks, then close.
        if (headers["content-length"] !== undefined) reading.reusable = false;
      }
    } else if (headers["content-length"] !== undefined) {
      const lengths = new Set(headers["content-length"].split(",").map((v) => v.trim()));
      const [only] = lengths;
      if (lengths.size !== 1 || !/^\d+$/.test(only!))
        throw badAnswer(`Content-Length ${headers["content-length"]}`);
      reading.left = Number(only);
    } else {
      reading.left = -2;
      reading.reusable = false;
    }
    return false;
  }

  private readBody(reading: Reading, data: Buffer): void {
    if (reading.left >= 0) {
      if (data.length > reading.left) throw badAnswer("more bytes than its Content-Length");
      if (data.length > 0) reading.body.push(data);
      reading.left -= data.length;
      if (reading.left === 0) this.finish();
      return;
    }
    if (reading.left === -2) {
      if (data.length > 0) reading.body.push(data);
      return;
    }
    this.readChunks(reading, data);
  }

  /** A chunked body (RFC 9112 §7.1): sizes in hex with optional extensions, each chunk's CRLF, trailers at the end. */
  private readChunks(reading: Reading, input: Buffer): void {
    let data = input;
    while (data.length > 0) {
      if (reading.chunkState === "data") {
        const take = Math.min(data.length, this.chunkLeft);
        reading.body.push(data.subarray(0, take));
        this.chunkLeft -= take;
        data = data.subarray(take);
        if (this.chunkLeft === 0) reading.chunkState = "data-end";
        continue;
      }
      const line = data.indexOf("\r\n");
      if (line < 0) {
        if (data.length > MAX_HEAD_BYTES) throw badAnswer("chunk line too long");
        this.pending = data;
        return;
      }
      const text = data.toString("latin1", 0, line);
      data = data.subarray(line + 2);
      if (reading.chunkState === "data-end") {
        if (text !== "") throw badAnswer("chunk not followed by CRLF");
        reading.chunkState = "size";
      } else if (reading.chunkState === "size") {
        const size = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/.exec(text);
        if (!size) throw badAnswer(`chunk size ${JSON.stringify(text.slice(0, 100))}`);
        this.chunkLeft = Number.parseInt(size[1]!, 16);
        reading.chunkState = this.chunkLeft === 0 ? "trailers" : "data";
      } else if (text === "") {
        // The empty line after the trailers: the answer is whole.
        if (data.length > 0) throw badAnswer("data after the answer");
        this.finish();
        return;
      }
    }
  }

  private chunkLeft = 0;

  /** The answer is whole: hand it over and park the connection, or close it. */
  private finish(): void {
    const reading = this.reading!;
    this.reading = undefined;
    const body = reading.body;
    const text =
      body.length === 0
        ? ""
        : body.length === 1
          ? body[0]!.toString("utf8")
          : Buffer.concat(body).toString("utf8");
    const { status, statusText, headers } = reading;
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
    if (!this.broken && reading.reusable && reading.keepAliveMs > 0) this.park(reading.keepAliveMs);
    else {
      this.broken = true;
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
