// The one way flash-worker calls out over HTTP: node:http (wire.ts) with a deadline per attempt, withRetry on connection
// failures and overloaded answers, and the target's circuit breaker; callers turn answers into their own errors.
import { FlashError } from "../flash-error.js";
import type { CircuitBreaker } from "./breaker.js";
import { type Outcome, type RetryPolicy, withRetry } from "./retry.js";
import { type Transport, transportFor, type WireAnswer } from "./wire.js";

/** Overloaded or timed-out answers that a repeat may fix, as the RunPod APIs send them. */
export const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 429, 502, 503, 504]);

export interface HttpRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Deadline of one attempt; none for a stream that lasts as long as the caller wants. */
  timeoutMs?: number;
  /** Aborting ends the attempt under way and the waits between attempts. */
  signal?: AbortSignal;
  /** Aborting ends the waits between attempts but not an attempt under way (a shutdown's grace running out). */
  stopRetrying?: AbortSignal;
  /** No retry waits past this time (Date.now() ms): a bound on how long the attempts go on. */
  retryDeadline?: number;
  /** Names the call in logs and errors, e.g. "POST /run" or "Result post". */
  what: string;
  /** The job the call is for, when there is one (for logs and errors). */
  id?: string;
  /** False for a call that must not run twice (a create, a POST route): only a connection never made is retried. */
  idempotent?: boolean;
}

/** An answer with its body read as text. */
export type HttpAnswer = WireAnswer;

/** A target's circuit breaker and the caller's error while it is open. */
export interface Circuit {
  breaker: CircuitBreaker;
  openError: (retryInMs: number, failures: number) => Error;
}

export interface HttpClientOptions {
  retry: RetryPolicy;
  /** Non-2xx answers worth another attempt; connection failures always are. */
  retryStatus: (status: number) => boolean;
  /** Stands in for the network (tests); node:http otherwise. */
  fetch?: typeof fetch;
  /** The wire when no `fetch` stands in: node:http by default; the worker's platform calls use h1.ts. */
  wire?: Transport;
  /** Checked before each call and told how it went: failures are connection errors, 5xx and retryable answers. */
  circuit?: Circuit;
  /** Told before each wait, to log it, with the failure that wants the retry. */
  onRetry?: (
    request: HttpRequest,
    reason: string,
    attempt: number,
    waitMs: number,
    outcome: Outcome<HttpAnswer>,
  ) => void;
  /** The caller's error once every attempt failed to connect; without it, the last failure as fetch threw it. */
  unreachable?: (request: HttpRequest, cause: unknown, attempts: number) => Error;
}

/** Sends requests for one caller with its retry policy, retryable answers, breaker and errors, fixed once. */
export class HttpClient {
  readonly retry: RetryPolicy;
  private readonly doFetch: typeof fetch;
  private readonly transport: Transport;

  constructor(private readonly options: HttpClientOptions) {
    this.retry = options.retry;
    this.doFetch = options.fetch ?? fetch;
    this.transport = transportFor(options.fetch, options.wire);
  }

  /** One attempt, no retries, the body left unread (its deadline runs on while it is read): streams, best-effort calls. */
  open(request: HttpRequest): Promise<Response> {
    const { signal, timeoutMs } = request;
    const deadline = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    return this.doFetch(request.url, {
      method: request.method,
      headers: request.headers,
      body: request.body,
      signal: signal && deadline ? AbortSignal.any([signal, deadline]) : (signal ?? deadline),
    });
  }

  /**
   * Sends `request` until an answer stands or the attempts are spent; resolves with the last answer whatever
   * its status (the caller maps non-2xx to its error), rejects with `unreachable`'s error or the breaker's.
   */
  async send(request: HttpRequest): Promise<HttpAnswer> {
    const { circuit, onRetry } = this.options;
    if (circuit) {
      const admission = circuit.breaker.admit();
      if (!admission.allowed) throw circuit.openError(admission.retryInMs, admission.failures);
    }
    let attempts = 0;
    let answer: HttpAnswer;
    try {
      answer = await withRetry(
        this.retry,
        (attempt) => {
          attempts = attempt;
          return this.transport(request);
        },
        (outcome) => this.classify(request, outcome),
        {
          signal: retrySignal(request),
          deadline: request.retryDeadline,
          onRetry:
            onRetry &&
            ((reason, attempt, waitMs, outcome) => onRetry(request, reason, attempt, waitMs, outcome)),
        },
      );
    } catch (error) {
      // Nothing went out, and the same request would fail the same way: the caller's error, not the target's.
      if (unsendable(error))
        throw new RequestInvalidError(`${request.what} could not be sent: ${describeFailure(error)}`);
      circuit?.breaker.failure();
      throw this.options.unreachable ? this.options.unreachable(request, error, attempts) : error;
    }
    if (circuit) {
      const { status } = answer.response;
      if (status >= 500 || this.options.retryStatus(status)) circuit.breaker.failure();
      else circuit.breaker.success();
    }
    return answer;
  }

  private classify(request: HttpRequest, outcome: Outcome<HttpAnswer>): string | undefined {
    if (!outcome.ok) {
      if (unsendable(outcome.error)) return undefined;
      // A reset or a deadline after the request went out may follow work done: not repeated unless idempotent.
      if (request.idempotent === false && !neverSent(outcome.error)) return undefined;
      return describeFailure(outcome.error);
    }
    const { response } = outcome.value;
    if (response.ok || request.idempotent === false || !this.options.retryStatus(response.status)) {
      return undefined;
    }
    return describeAnswer(outcome.value);
  }
}

/** What ends the waits between attempts: the request's signal, its stopRetrying signal, or either. */
function retrySignal({ signal, stopRetrying }: HttpRequest): AbortSignal | undefined {
  return signal && stopRetrying ? AbortSignal.any([signal, stopRetrying]) : (stopRetrying ?? signal);
}

/** A request that could not be built (a header, URL or method Node refuses): retrying would fail the same way. */
export class RequestInvalidError extends FlashError {
  readonly code = "HTTP_REQUEST_INVALID";
  override name = "RequestInvalidError";
}

/** Node's codes for a request it refuses to build, before anything is sent. */
const UNSENDABLE = new Set([
  "ERR_INVALID_CHAR",
  "ERR_INVALID_HTTP_TOKEN",
  "ERR_INVALID_URL",
  "ERR_INVALID_PROTOCOL",
  "ERR_UNESCAPED_CHARACTERS",
  "ERR_HTTP_INVALID_HEADER_VALUE",
]);

/** Whether `err` says the request could not be built: a local, deterministic failure, never a network one. */
export function unsendable(err: unknown): boolean {
  return UNSENDABLE.has(String((err as { code?: unknown } | null)?.code));
}

/** Socket errors that prove the request never reached a server. */
const NOT_SENT = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
]);

export function neverSent(err: unknown): boolean {
  const code = (err as { code?: unknown; cause?: { code?: unknown } } | null)?.code;
  const inner = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  return NOT_SENT.has(String(code)) || NOT_SENT.has(String(inner));
}

/** "503 Service Unavailable: <start of the body>". */
export function describeAnswer({ response, text }: HttpAnswer): string {
  return `${response.status} ${response.statusText}${text ? `: ${text.slice(0, 300)}` : ""}`;
}

/** What a failed fetch says: undici hides the socket error ("fetch failed") in `cause`, which is what happened. */
export function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const inner = err.cause instanceof Error ? err.cause : undefined;
  if (!inner) return err.message;
  const code = (inner as { code?: unknown }).code;
  return `${inner.message}${typeof code === "string" && !inner.message.includes(code) ? ` (${code})` : ""}`;
}
