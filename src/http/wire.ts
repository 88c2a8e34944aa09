// One HTTP exchange over Node's own http/https with kept-alive connections, the answer's body read whole as text.
// Why not fetch: on Node 20 a take → done pair through fetch costs more CPU than through node:http, most of a no-op
// job, and undici's own request() is as fast but costs its import (docs/design.md §4.8 gives both figures).
import type http from "node:http";
import type https from "node:https";
import { FlashError } from "../flash-error.js";
import { lookupFor, targetOf } from "./target.js";

export interface WireRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Deadline of the whole exchange, answer body included. */
  timeoutMs?: number;
  /** Aborting ends the exchange; it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** What callers read of an answer: the part of fetch's Response the runtime uses. */
export interface WireResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly headers: { get(name: string): string | null };
}

/** An answer with its body read as text. */
export interface WireAnswer {
  response: WireResponse;
  text: string;
}

/** Sends one request and reads its answer; callers own retries. */
export type Transport = (request: WireRequest) => Promise<WireAnswer>;

/** The exchange ran past its deadline. */
export class WireTimeoutError extends FlashError {
  override readonly name = "TimeoutError";
  readonly code = "HTTP_TIMEOUT";
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

// Kept-alive connections, an idle one closed after 4 s (fetch's default) or sooner when the server's Keep-Alive
// hint says so, so a request seldom meets a connection the server is closing. (The timeout only closes idle
// connections: on a busy one it emits an event no one acts on; each exchange keeps its own deadline.)
export const IDLE_CONNECTION_MS = 4_000;
let plain: { agent: http.Agent; request: typeof http.request } | undefined;
let tls: { agent: https.Agent; request: typeof https.request } | undefined;

/** node:http and its agent, loaded on first use: the queue worker's own calls go over h1.ts and never load it. */
function plainTransport(): { agent: http.Agent; request: typeof http.request } {
  if (!plain) {
    const { Agent, request } = process.getBuiltinModule("node:http");
    plain = { agent: new Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }), request };
  }
  return plain;
}

/** node:https and its agent, loaded on the first https URL: a worker on a plain-http platform never loads TLS. */
function secureTransport(): { agent: https.Agent; request: typeof https.request } {
  if (!tls) {
    const { Agent, request } = process.getBuiltinModule("node:https");
    tls = { agent: new Agent({ keepAlive: true, timeout: IDLE_CONNECTION_MS }), request };
  }
  return tls;
}

function responseOf(res: http.IncomingMessage): WireResponse {
  const status = res.statusCode ?? 0;
  const raw = res.headers;
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: res.statusMessage ?? "",
    headers: {
      get(name: string): string | null {
        const key = name.toLowerCase();
        // Own headers only: res.headers is a plain object, whose "constructor" is Object's.
        const value = Object.hasOwn(raw, key) ? raw[key] : undefined;
        return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
      },
    },
  };
}

/** Starts `request` over node:http or node:https by the URL's scheme, the kept-alive agents and parsed origins. */
function send(request: WireRequest, onResponse: (res: http.IncomingMessage) => void): http.ClientRequest {
  const target = targetOf(request.url);
  const secure = target ? target.origin.secure : /^https:/i.test(request.url);
  const options: http.RequestOptions = {
    method: request.method,
    headers: request.headers,
    agent: secure ? secureTransport().agent : plainTransport().agent,
  };
  if (target) {
    const { origin } = target;
    options.protocol = origin.protocol;
    options.hostname = origin.hostname;
    if (origin.port !== undefined) options.port = origin.port;
    options.path = target.path;
    options.lookup = origin.lookup;
  } else {
    options.lookup = lookupFor(request.url);
  }
  const start = secure ? secureTransport().request : plainTransport().request;
  return target ? start(options, onResponse) : start(request.url, options, onResponse);
}

/** The default transport: node:http or node:https by the URL's scheme. */
export const nodeTransport: Transport = (request) =>
  new Promise<WireAnswer>((resolve, reject) => {
    const { signal, timeoutMs } = request;
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (error: unknown, answer?: WireAnswer) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (answer) resolve(answer);
      else reject(error);
    };
    const req = send(request, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const text =
          chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8");
        finish(undefined, { response: responseOf(res), text });
      });
      // A body cut off midway is a lost answer, as a dropped connection is.
      res.on("close", () => {
        if (!res.complete) finish(new Error("the answer was cut off (ECONNRESET)"));
      });
      res.on("error", (err) => finish(err));
    });
    const onAbort = () => {
      const reason = abortReason(signal!);
      finish(reason);
      req.destroy();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        finish(new WireTimeoutError(timeoutMs));
        req.destroy();
      }, timeoutMs);
    }
    req.on("error", (err) => finish(err));
    req.end(request.body);
  });

/** An answer whose body is read as it arrives. */
export interface WireStream {
  response: WireResponse;
  /** The body; a read of one cut off midway fails with ECONNRESET, or with the signal's reason once aborted. */
  body: http.IncomingMessage;
}

/**
 * Sends one request and resolves once the answer's head arrives, its body left to stream: cheaper per request
 * and sooner than fetch on Node 20 (docs/benchmarks-history.md). Aborting `signal` at any time, body included, ends the
 * exchange (the server sees the disconnect); `timeoutMs` is not applied, the caller's signal is the deadline.
 */
export function openStream(request: Omit<WireRequest, "timeoutMs">): Promise<WireStream> {
  return new Promise<WireStream>((resolve, reject) => {
    const { signal } = request;
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let body: http.IncomingMessage | undefined;
    const onAbort = () => {
      const reason = abortReason(signal!);
      if (body) body.destroy(reason as Error);
      else reject(reason);
      req.destroy();
    };
    const req = send(request, (res) => {
      body = res;
      res.once("close", () => signal?.removeEventListener("abort", onAbort));
      resolve({ response: responseOf(res), body: res });
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    req.on("error", (err) => {
      signal?.removeEventListener("abort", onAbort);
      reject(err);
    });
    req.end(request.body);
  });
}

export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/** The transport to use: over `doFetch` when a caller (a test) stands it in for the network, `wire` (node:http) otherwise. */
export function transportFor(doFetch: typeof fetch | undefined, wire: Transport = nodeTransport): Transport {
  return doFetch ? fetchTransport(doFetch) : wire;
}

/** A transport over a fetch function: what tests pass to stand in for the network. */
export function fetchTransport(doFetch: typeof fetch): Transport {
  return async (request) => {
    const { signal, timeoutMs } = request;
    const limit = timeoutMs === undefined ? undefined : deadline(timeoutMs, signal);
    try {
      const response = await doFetch(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal: limit ? limit.signal : signal,
      });
      return { response, text: await response.text() };
    } finally {
      limit?.clear();
    }
  };
}

/**
 * A request's deadline, also ended by `outer`: one controller and one timer cleared when the request is
 * done. Cheaper per request than AbortSignal.any + AbortSignal.timeout, whose dependants a long-lived
 * signal keeps track of until they are collected.
 */
export function deadline(ms: number, outer?: AbortSignal): { signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError")),
    ms,
  );
  const onAbort = () => controller.abort(outer?.reason);
  if (outer?.aborted) onAbort();
  else outer?.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onAbort);
    },
  };
}
