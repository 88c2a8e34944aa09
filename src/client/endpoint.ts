// The endpoint client: run, runsync, status, stream, cancel and routes on one serverless endpoint.

import { WebSocket } from "ws";
import { ArgumentError, PayloadTooLargeError } from "../flash-error.js";
import { type CircuitBreakers, DEFAULT_BREAKERS } from "../http/breaker.js";
import { HttpClient, RETRYABLE_STATUS } from "../http/client.js";
import { backoffMs, CONNECT_RETRY, POLL_BACKOFF, type RetryPolicy, sleep } from "../http/retry.js";
import { type MessageSocket, messageSocket } from "../http/socket.js";
import type { WireResponse } from "../http/wire.js";
import { createLogger, type Logger } from "../log/index.js";
import { logLevelFrom } from "../options/index.js";
import { resolveApiKey } from "../project/credentials.js";
import { readDeployments } from "../project/deployments.js";
import { VERSION } from "../version.js";
import type { ClientOf } from "./contract.js";
import {
  CircuitOpenError,
  DeserializeError,
  EndpointConnectionError,
  EndpointError,
  EndpointHttpError,
  EndpointKindError,
  EndpointNotDeployedError,
  ExecutionTimeoutError,
  JobFailedError,
} from "./errors.js";

/** Job states (docs/protocol.md §4.6). */
export type JobStatus = "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED" | "FAILED" | "CANCELLED" | "TIMED_OUT";

/** A job as /status, /runsync and /cancel return it. */
export interface JobOutput<O = unknown> {
  id: string;
  status: JobStatus;
  output?: O;
  error?: unknown;
  /** Queued → taken, ms. */
  delayTime?: number;
  /** Taken → done, ms. */
  executionTime?: number;
  workerId?: string;
}

/** What the request carries besides `input` (docs/protocol.md §16 `EndpointInputPayload`). */
export interface JobOptions {
  webhook?: string;
  policy?: { executionTimeout?: number; ttl?: number; lowPriority?: boolean };
}

export interface WaitOptions {
  /** How long to wait for a terminal status before ExecutionTimeoutError (default: the client's timeoutMs). */
  timeoutMs?: number;
}

export interface EndpointHealth {
  jobs: { completed: number; failed: number; inProgress: number; inQueue: number; retried: number };
  workers: Record<string, number>;
}

/** The methods a load-balanced endpoint's routes take. */
export type RouteMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Route calls pinned to one worker with `X-Runpod-Worker-Id` (RunPod's serverless/load-balancing/worker-affinity):
 * `soft` prefers it and falls back to another, `strict` waits for it (404 when it is gone), `strict-resume`
 * also resumes it when it scaled down.
 */
export interface WorkerPin {
  workerId: string;
  mode?: "soft" | "strict" | "strict-resume";
}

/** A WebSocket to a load-balanced route, and the worker that took it (to pin the next calls to). */
export interface EndpointSocket extends MessageSocket {
  readonly workerId: string | undefined;
}

/** A route call's answer and the worker that gave it (its `X-Runpod-Worker-Id`, to pin the next calls to). */
export interface RouteAnswer<T = unknown> {
  body: T;
  /** Undefined where the platform names no worker (not a load balancer). */
  workerId: string | undefined;
}

export interface EndpointClientOptions {
  /** The endpoint's id: jobs go to `{baseUrl}/v2/<id>`, routes to `https://<id>.api.runpod.ai` (`{baseUrl}/lb/<id>` on another platform). */
  id?: string;
  /**
   * The endpoint's full URL instead of id and baseUrl: `{base_url}/v2/<id>` for a queue endpoint, or the
   * routes' base URL of a load-balanced one (`https://<id>.api.runpod.ai`, `http://127.0.0.1:8000/lb/<id>`).
   */
  url?: string;
  /** Used in messages and logs; with neither id nor url, the endpoint `flash deploy` created under this name. */
  name?: string;
  /**
   * The Pod `flash deploy --pod` created under this name (.flash/deployments.json): calls go to its proxy URL,
   * routes for a load-balanced app, jobs for a queue app's test API.
   */
  pod?: string;
  /** `{base_url}`; default RUNPOD_ENDPOINT_BASE_URL (a trailing /v2 is dropped), else https://api.runpod.ai. */
  baseUrl?: string;
  /** Default: RUNPOD_API_KEY / SERVICE_API_KEY, `.env`, then `~/.runpod/config.toml`. */
  apiKey?: string;
  /** Default wait of runsync() and wait(); the endpoint's executionTimeoutMs when given, else 60 s. */
  timeoutMs?: number;
  /** The endpoint's own limit, named when the platform times a job out. */
  executionTimeoutMs?: number;
  /** Retries of connection failures and 408/429/502/503/504 answers. */
  retry?: RetryPolicy;
  /**
   * Retry POST and PATCH route calls on 408/429/502/503/504 answers and lost connections too, as GET, PUT and
   * DELETE are (default false: such a call may have run its route already, so only a connection that was never
   * made is retried). Only for routes that are safe to run twice.
   */
  retryNonIdempotent?: boolean;
  /** Waits between status polls; reset when the status changes. */
  poll?: RetryPolicy;
  /** Shared per endpoint URL; pass your own (e.g. with a fake clock) to isolate them. */
  breakers?: CircuitBreakers;
  logger?: Logger;
  fetch?: typeof fetch;
  env?: Record<string, string | undefined>;
  /** Route calls carry `X-Runpod-Worker-Id` for this worker; `pin()` makes such a client. */
  pin?: WorkerPin;
  /** Where `.env` and `.flash/deployments.json` are looked up (default: the working directory). */
  cwd?: string;
  /** Home directory of the credentials file. */
  home?: string;
}

/** The platform's /run body limit, and the toolkit's serialized-argument limit (interface document, "Limits"). */
export const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;
/** runsync() and wait() without a timeout and without an executionTimeoutMs (docs/toolkit.md §7). */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** Deadline of one short request (status, cancel, health, …). */
const REQUEST_TIMEOUT_MS = 30_000;
/** A strict pin may wait for its worker as long as the load balancer does (about 5 min, worker-affinity), then answer. */
const STRICT_PIN_TIMEOUT_MS = 5 * 60_000 + REQUEST_TIMEOUT_MS;
/** The platform holds /runsync at most 300 s and at least 1 s (docs/protocol.md §16). */
const SYNC_WAIT = { minMs: 1_000, maxMs: 300_000 };
/** Extra time a /runsync request may take beyond the wait it asked for. */
const SYNC_SLACK_MS = 15_000;

/** The worker that answered a load-balanced call, and a call's affinity (serverless/load-balancing/worker-affinity). */
const WORKER_ID_HEADER = "X-Runpod-Worker-Id";

/** RunPod's docs: "set the `open_timeout` parameter to allow time for workers to scale up" (60 s in their example). */
const SOCKET_OPEN_TIMEOUT_MS = 60_000;

const TERMINAL: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"]);
const USER_AGENT = `flash-worker-client/${VERSION} Node.js/${process.versions.node}`;

interface Target {
  id: string;
  /** `{base_url}/v2/<id>`: where jobs go. */
  url: string;
  /** Where routes go. */
  routesUrl: string;
  /** Known from the URL given or the deployment record; undefined when only an id was given. */
  kind?: "queue" | "load-balanced";
}

/** Route calls that may do their work twice if repeated (RFC 9110 §9.2.2). */
const NON_IDEMPOTENT: ReadonlySet<RouteMethod> = new Set(["POST", "PATCH"]);
/** A worker's or the platform's 504 for a route past the execution timeout (src/app/rules.ts timeoutMessage). */
const TIMEOUT_ANSWER = /^Execution timeout on .+ after (\d+(?:\.\d+)?)s\b/;

/** A `/v2/<id>` job URL: its base and the id. */
const JOB_URL = /^(.*)\/v2\/([^/]+)$/;

/**
 * A client for one serverless endpoint: `{base_url}/v2/<endpoint_id>` with `Authorization: Bearer <key>`.
 * Connection failures are retried; consecutive failures open the endpoint's circuit breaker.
 */
export class EndpointClient {
  readonly name: string;
  private target: Target | undefined;
  private key: string | undefined;
  private httpOf: HttpClient | undefined;
  private readonly log: Logger;
  private readonly env: Record<string, string | undefined>;
  private readonly retry: RetryPolicy;
  private readonly poll: RetryPolicy;
  private readonly timeoutMs: number;

  constructor(private readonly options: EndpointClientOptions) {
    this.env = options.env ?? process.env;
    const id = options.id ?? (options.url ? lastSegment(options.url) : undefined);
    if (!id && !options.name && !options.pod) {
      throw new ArgumentError("EndpointClient needs an endpoint id, url or name, or a Pod's name");
    }
    this.name = options.name ?? options.pod ?? id ?? "";
    // LOG_LEVEL as the toolkit reads it; text lines on stderr, so a program's stdout stays its own.
    this.log =
      options.logger ??
      createLogger({ level: logLevelFrom(this.env), json: false, destination: process.stderr });
    this.retry = options.retry ?? CONNECT_RETRY;
    this.poll = options.poll ?? POLL_BACKOFF;
    const execution = options.executionTimeoutMs ?? 0;
    this.timeoutMs = options.timeoutMs ?? (execution > 0 ? execution : DEFAULT_TIMEOUT_MS);
  }

  /** The endpoint's URL; throws EndpointNotDeployedError when only a name was given and it was never deployed. */
  get url(): string {
    return this.resolve().url;
  }

  /** Starts a job: POST /run. */
  async run<I = unknown>(input: I, options: JobOptions = {}): Promise<{ id: string; status: JobStatus }> {
    const body = this.jobBody(input, options);
    this.resourceLog().info("API /run");
    const job = await this.jobRequest("POST", "/run", body);
    this.resourceLog().info(`Started Job:${job.id}`);
    this.jobLog(job.id).info(`Status: ${job.status}`);
    return { id: job.id, status: job.status };
  }

  /**
   * Runs a job and waits for it: POST /runsync, then status polls if the platform's wait ran out.
   * Resolves with the COMPLETED job; throws JobFailedError (FAILED, CANCELLED) or ExecutionTimeoutError.
   */
  async runsync<I = unknown, O = unknown>(
    input: I,
    options: JobOptions & WaitOptions = {},
  ): Promise<JobOutput<O>> {
    const { timeoutMs = this.timeoutMs, ...jobOptions } = options;
    const body = this.jobBody(input, jobOptions);
    const deadline = Date.now() + timeoutMs;
    const waitMs = Math.min(SYNC_WAIT.maxMs, Math.max(SYNC_WAIT.minMs, timeoutMs));
    this.resourceLog().info("API /runsync");
    const job = await this.jobRequest("POST", `/runsync?wait=${waitMs}`, body, waitMs + SYNC_SLACK_MS);
    this.resourceLog().info(`Started Job:${job.id}`);
    this.jobLog(job.id).info(`Status: ${job.status}`);
    if (TERMINAL.has(job.status)) return this.finish(job, timeoutMs) as JobOutput<O>;
    return this.pollUntilDone<O>(job, deadline, timeoutMs);
  }

  /** The job's status now: GET /status/<job_id>. */
  async status<O = unknown>(jobId: string): Promise<JobOutput<O>> {
    return (await this.jobRequest("GET", `/status/${encodeURIComponent(jobId)}`)) as JobOutput<O>;
  }

  /** Polls the job's status with backoff until it ends; resolves or throws as runsync() does. */
  async wait<O = unknown>(jobId: string, options: WaitOptions = {}): Promise<JobOutput<O>> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const deadline = Date.now() + timeoutMs;
    const job = await this.status(jobId);
    this.jobLog(job.id).info(`Status: ${job.status}`);
    if (TERMINAL.has(job.status)) return this.finish(job, timeoutMs) as JobOutput<O>;
    return this.pollUntilDone<O>(job, deadline, timeoutMs);
  }

  /**
   * The job's stream chunks as they arrive (GET /stream/<job_id> until the job ends); a job without a
   * generator handler yields its final output once. Throws JobFailedError if the job fails.
   */
  async *stream<O = unknown>(jobId: string, options: WaitOptions = {}): AsyncGenerator<O, void, undefined> {
    const deadline = options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs;
    const path = `/stream/${encodeURIComponent(jobId)}`;
    let empty = 0;
    for (;;) {
      const answer = await this.request<{ status?: string; stream?: { output?: unknown }[] }>("GET", path);
      if (!answer || typeof answer.status !== "string" || !Array.isArray(answer.stream)) {
        throw new DeserializeError(this.name, new Error("expected {status, stream: [...]} from /stream"));
      }
      for (const chunk of answer.stream) yield chunk.output as O;
      if (TERMINAL.has(answer.status)) break;
      if (deadline !== undefined && Date.now() >= deadline) {
        throw new ExecutionTimeoutError(this.name, (options.timeoutMs ?? 0) / 1000, jobId);
      }
      // A platform that answers /stream at once with nothing new is polled with backoff, not in a hot loop.
      empty = answer.stream.length === 0 ? empty + 1 : 0;
      if (empty > 0) await sleep(backoffMs(this.poll, empty));
    }
    const job = await this.status(jobId);
    this.jobLog(job.id).info(`Status: ${job.status}`);
    this.finish(job, options.timeoutMs ?? this.timeoutMs);
  }

  /**
   * Calls a function the worker registered with remote(), as Python's toolkit does: the arguments pickled, one
   * /runsync job, the result unpickled. A function that raised fails the job: JobFailedError with its traceback.
   */
  async call<R = unknown>(name: string, ...args: unknown[]): Promise<R> {
    // The pickle codec is loaded on the first remote call only: most clients never make one.
    const { serializeArg, deserializeArg } = await import("../payload/base64.js");
    const input = { function_name: name, args: args.map((a) => serializeArg(a)), kwargs: {} };
    const job = await this.runsync<typeof input, { success?: boolean; result?: unknown }>(input);
    const result = job.output?.result;
    return (result === null || result === undefined ? undefined : deserializeArg(result)) as R;
  }

  /** POST /cancel/<job_id>. */
  async cancel(jobId: string): Promise<JobOutput> {
    return this.jobRequest("POST", `/cancel/${encodeURIComponent(jobId)}`);
  }

  /** POST /retry/<job_id>: requeues a FAILED or TIMED_OUT job under the same id. */
  async retryJob(jobId: string): Promise<{ id: string; status: JobStatus }> {
    return this.jobRequest("POST", `/retry/${encodeURIComponent(jobId)}`);
  }

  /** GET /health: job and worker counters. */
  async health(): Promise<EndpointHealth> {
    return this.request<EndpointHealth>("GET", "/health");
  }

  /** POST /purge-queue: drops queued jobs (running ones go on). */
  async purgeQueue(): Promise<{ removed: number; status: string }> {
    return this.request<{ removed: number; status: string }>("POST", "/purge-queue");
  }

  /** GET a route of a load-balanced endpoint; `query` becomes the query string. */
  get<T = unknown>(path: string, query?: Record<string, string | number | boolean>): Promise<T> {
    const search = query
      ? `?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`
      : "";
    return this.route<T>("GET", `${path}${search}`);
  }

  /** POST `body` (sent as JSON) to a route of a load-balanced endpoint; resolves with the answer's JSON. */
  post<T = unknown>(path: string, body?: unknown): Promise<T> {
    return this.route<T>("POST", path, body);
  }

  put<T = unknown>(path: string, body?: unknown): Promise<T> {
    return this.route<T>("PUT", path, body);
  }

  patch<T = unknown>(path: string, body?: unknown): Promise<T> {
    return this.route<T>("PATCH", path, body);
  }

  delete<T = unknown>(path: string, body?: unknown): Promise<T> {
    return this.route<T>("DELETE", path, body);
  }

  /** One route call with the client's retries and breaker; a non-2xx answer is an EndpointHttpError. */
  async route<T = unknown>(method: RouteMethod, path: string, body?: unknown): Promise<T> {
    return (await this.routeAnswer<T>(method, path, body)).body;
  }

  /** As route(), with the id of the worker that answered: `pin(answer.workerId)` sends the next calls there. */
  async routeAnswer<T = unknown>(method: RouteMethod, path: string, body?: unknown): Promise<RouteAnswer<T>> {
    if (!path.startsWith("/"))
      throw new ArgumentError(`Route paths start with "/": got ${JSON.stringify(path)}`);
    const target = this.resolve();
    if (target.kind === "queue") throw new EndpointKindError(this.name, "queue", `${method} ${path}`);
    let text: string | undefined;
    if (body !== undefined) {
      try {
        text = JSON.stringify(body);
      } catch (err) {
        throw new EndpointError(
          `Body for ${method} ${path} on endpoint ${this.name} cannot be sent as JSON: ${(err as Error).message}`,
          this.name,
        );
      }
      checkSize(text, this.name);
    }
    this.resourceLog().info(`${method} ${path}`);
    // POST and PATCH are not idempotent: an answered failure may mean the route ran, so it is not repeated.
    const idempotent = this.options.retryNonIdempotent === true || !NON_IDEMPOTENT.has(method);
    const pinned = this.options.pin;
    const affinity: Record<string, string> = pinned
      ? {
          [WORKER_ID_HEADER]:
            pinned.mode && pinned.mode !== "soft" ? `${pinned.mode} ${pinned.workerId}` : pinned.workerId,
        }
      : {};
    const strict = pinned?.mode !== undefined && pinned.mode !== "soft";
    const { body: answer, response } = await this.exchange<T>(
      method,
      path,
      text,
      strict ? STRICT_PIN_TIMEOUT_MS : REQUEST_TIMEOUT_MS,
      "routes",
      idempotent,
      affinity,
    );
    return { body: answer, workerId: response.headers.get(WORKER_ID_HEADER) ?? undefined };
  }

  /**
   * Opens a WebSocket to a route of a load-balanced endpoint, the key in `Authorization: Bearer` (as RunPod's
   * docs send it) and the pin's `X-Runpod-Worker-Id`. Waits up to `openTimeoutMs` for the upgrade (default 60 s:
   * the docs' advice, "to allow workers time to scale up"); a refusal is an EndpointHttpError.
   */
  async socket(path: string, options: { openTimeoutMs?: number } = {}): Promise<EndpointSocket> {
    if (!path.startsWith("/"))
      throw new ArgumentError(`Route paths start with "/": got ${JSON.stringify(path)}`);
    const target = this.resolve();
    if (target.kind === "queue") throw new EndpointKindError(this.name, "queue", `WebSocket ${path}`);
    const url = `${target.routesUrl}${path}`.replace(/^http/, "ws");
    const pinned = this.options.pin;
    const ws = new WebSocket(url, {
      headers: {
        Authorization: `Bearer ${this.apiKey()}`,
        "User-Agent": USER_AGENT,
        ...(pinned
          ? {
              [WORKER_ID_HEADER]:
                pinned.mode && pinned.mode !== "soft" ? `${pinned.mode} ${pinned.workerId}` : pinned.workerId,
            }
          : {}),
      },
      handshakeTimeout: options.openTimeoutMs ?? SOCKET_OPEN_TIMEOUT_MS,
    });
    const socket = messageSocket(ws);
    let workerId: string | undefined;
    ws.once("upgrade", (res) => {
      const header = res.headers[WORKER_ID_HEADER.toLowerCase()];
      workerId = Array.isArray(header) ? header[0] : header;
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("unexpected-response", (_req, res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.once("end", () => {
          ws.terminate();
          reject(new EndpointHttpError(this.name, res.statusCode ?? 0, res.statusMessage ?? "", body, url));
        });
      });
      ws.once("error", (err) => reject(new EndpointConnectionError(this.name, url, err)));
    });
    return Object.assign(socket, { workerId });
  }

  /**
   * A client for the same endpoint whose route calls go to one worker (`X-Runpod-Worker-Id`): soft by default
   * (falls back to another when it is busy or gone); strict waits for it and fails with a 404 once it is gone.
   */
  pin(workerId: string, mode: WorkerPin["mode"] = "soft"): EndpointClient {
    if (!/^\S+$/.test(workerId))
      throw new ArgumentError(`A worker id has no spaces and is not empty: got ${JSON.stringify(workerId)}`);
    return new EndpointClient({ ...this.options, pin: { workerId, mode } });
  }

  private async pollUntilDone<O>(
    first: JobOutput,
    deadline: number,
    timeoutMs: number,
  ): Promise<JobOutput<O>> {
    let status = first.status;
    let unchanged = 0;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) {
        await this.cancelAfterTimeout(first.id);
        throw new ExecutionTimeoutError(this.name, timeoutMs / 1000, first.id);
      }
      unchanged++;
      await sleep(Math.min(left, backoffMs(this.poll, unchanged)));
      const job = await this.status(first.id);
      if (job.status !== status) {
        status = job.status;
        unchanged = 0;
        this.jobLog(job.id).info(`Status: ${job.status}`);
      } else if (unchanged % 2 === 0) {
        this.jobLog(job.id).debug(".".repeat(unchanged / 2));
      }
      if (TERMINAL.has(job.status)) return this.finish(job, timeoutMs) as JobOutput<O>;
    }
  }

  /** Logs the worker's timings and turns a failed, cancelled or timed-out job into its error. */
  private finish(job: JobOutput, timeoutMs: number): JobOutput {
    const worker = this.log.child({ subject: `Worker:${job.workerId ?? "unknown"}` });
    if (job.delayTime !== undefined) worker.info(`Delay Time: ${job.delayTime} ms`);
    if (job.executionTime !== undefined) worker.info(`Execution Time: ${job.executionTime} ms`);
    if (job.status === "COMPLETED") return job;
    if (job.status === "TIMED_OUT") {
      const limit = this.options.executionTimeoutMs ?? job.executionTime ?? timeoutMs;
      throw new ExecutionTimeoutError(this.name, Math.round(limit / 100) / 10, job.id);
    }
    throw new JobFailedError(this.name, job);
  }

  private async cancelAfterTimeout(jobId: string): Promise<void> {
    this.resourceLog().info(`Cancelling job ${jobId}`);
    try {
      await this.cancel(jobId);
    } catch (err) {
      this.resourceLog().warn(`Could not cancel job ${jobId}: ${(err as Error).message}`);
    }
  }

  private jobBody(input: unknown, options: JobOptions): string {
    let body: string;
    try {
      body = JSON.stringify({ input, ...options });
    } catch (err) {
      throw new EndpointError(
        `Input for endpoint ${this.name} cannot be sent as JSON: ${(err as Error).message}`,
        this.name,
      );
    }
    checkSize(body, this.name);
    return body;
  }

  private async jobRequest(method: "GET" | "POST", path: string, body?: string, timeoutMs?: number) {
    if (this.resolve().kind === "load-balanced") {
      throw new EndpointKindError(this.name, "load-balanced", `${method} ${path.split("?")[0]}`);
    }
    const job = await this.request<JobOutput>(method, path, body, timeoutMs);
    if (
      typeof job !== "object" ||
      job === null ||
      typeof job.id !== "string" ||
      typeof job.status !== "string"
    ) {
      throw new DeserializeError(
        this.name,
        new Error(`expected a job with id and status, got ${preview(job)}`),
      );
    }
    return job;
  }

  /** One call through the shared HTTP client (retries, the endpoint's breaker), the answer parsed as JSON. */
  private async request<T>(
    method: RouteMethod,
    path: string,
    body?: string,
    timeoutMs = REQUEST_TIMEOUT_MS,
  ): Promise<T> {
    return (await this.exchange<T>(method, path, body, timeoutMs, "jobs", true, {})).body;
  }

  /** request(), with the answer's headers. */
  private async exchange<T>(
    method: RouteMethod,
    path: string,
    body: string | undefined,
    timeoutMs: number,
    to: "jobs" | "routes",
    idempotent: boolean,
    extraHeaders: Record<string, string>,
  ): Promise<{ body: T; response: WireResponse }> {
    const target = this.resolve();
    if (to === "jobs" && target.kind === "load-balanced") {
      throw new EndpointKindError(this.name, "load-balanced", `${method} ${path.split("?")[0]}`);
    }
    const url = `${to === "jobs" ? target.url : target.routesUrl}${path}`;
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.apiKey()}`,
      "User-Agent": USER_AGENT,
      Accept: "application/json",
      ...extraHeaders,
    };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const answer = await this.http().send({
      method,
      url,
      headers,
      body,
      timeoutMs,
      what: `${method} ${path}`,
      idempotent,
    });
    const { response, text } = answer;
    if (response.ok) return { body: this.parse<T>(text), response };
    if (response.status === 404) this.notFound(text, target, to, `${method} ${path.split("?")[0]}`);
    // A route that ran past the endpoint's execution timeout: the same error as a timed-out job.
    const timedOut = response.status === 504 ? TIMEOUT_ANSWER.exec(errorText(text)) : null;
    if (timedOut) {
      throw new ExecutionTimeoutError(
        this.name,
        Number(timedOut[1]),
        undefined,
        `${method} ${path.split("?")[0]}`,
      );
    }
    throw new EndpointHttpError(this.name, response.status, response.statusText, text, url);
  }

  /** A 404 that says which way the call went wrong: no such endpoint, or the other kind of endpoint. */
  private notFound(text: string, target: Target, to: "jobs" | "routes", attempted: string): void {
    const error = errorText(text);
    // A load-balanced worker's own 404 for /run, /runsync, /status/…: the job URL led to routes.
    if (
      to === "jobs" &&
      /^No route [A-Z]+ \S*\/(run|runsync|status|stream|cancel|retry|health|purge-queue)\b/.test(error)
    ) {
      throw new EndpointKindError(this.name, "load-balanced", attempted);
    }
    // The local platform names the nearest existing id: "… not found (did you mean <id>?)".
    const near = /\(did you mean (\S+)\?\)$/.exec(error)?.[1];
    const hint = near ? ` (did you mean ${near}?)` : "";
    if (to === "jobs" && /^Endpoint \S+ not found\b/.test(error)) {
      throw new EndpointNotDeployedError(
        this.name,
        `the platform at ${baseOf(target.url)} has no queue endpoint ${target.id}${hint} (a load-balanced one is called through its routes: post("/path", body), get("/path"))`,
      );
    }
    // The local platform's /lb/<id> of a queue endpoint says so.
    if (to === "routes" && /^Endpoint \S+ is a queue endpoint\b/.test(error)) {
      throw new EndpointKindError(this.name, "queue", attempted);
    }
    if (to === "routes" && /^Load-balanced endpoint \S+ not found\b/.test(error)) {
      throw new EndpointNotDeployedError(
        this.name,
        `the platform at ${baseOf(target.url)} has no load-balanced endpoint ${target.id}${hint} (a queue endpoint takes jobs: run(input), runsync(input))`,
      );
    }
  }

  private parse<T>(text: string): T {
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new DeserializeError(this.name, err);
    }
  }

  private resolve(): Target {
    if (this.target) return this.target;
    const { options } = this;
    if (options.url) {
      const url = options.url.replace(/\/+$/, "");
      const job = JOB_URL.exec(url);
      this.target = job
        ? {
            id: decodeURIComponent(job[2]!),
            url,
            routesUrl: routesUrlOf(job[1]!, decodeURIComponent(job[2]!)),
          }
        : { id: lastSegment(url), url, routesUrl: url, kind: "load-balanced" };
    } else if (options.id) {
      const base = this.baseUrl();
      this.target = {
        id: options.id,
        url: `${base}/v2/${encodeURIComponent(options.id)}`,
        routesUrl: routesUrlOf(base, options.id),
      };
    } else if (options.pod) {
      const cwd = options.cwd ?? process.cwd();
      const deployed = readDeployments(cwd)?.pods?.[options.pod];
      if (!deployed?.url) {
        throw new EndpointNotDeployedError(
          options.pod,
          deployed
            ? "its Pod's address is not known yet (flash pods shows it once it runs)"
            : `no Pod of that name is recorded in ${cwd}/.flash (flash deploy --pod)`,
        );
      }
      const job = JOB_URL.exec(deployed.url);
      this.target = {
        id: job ? decodeURIComponent(job[2]!) : deployed.id,
        url: deployed.url,
        routesUrl: deployed.url,
        kind: deployed.kind,
      };
    } else {
      const cwd = options.cwd ?? process.cwd();
      const deployed = readDeployments(cwd)?.endpoints[this.name];
      if (!deployed) {
        throw new EndpointNotDeployedError(this.name, `no deployment of it is recorded in ${cwd}/.flash`);
      }
      this.target = { id: deployed.id, url: deployed.url, routesUrl: deployed.url, kind: deployed.kind };
    }
    return this.target;
  }

  private baseUrl(): string {
    const given = this.options.baseUrl ?? this.env.RUNPOD_ENDPOINT_BASE_URL ?? "https://api.runpod.ai";
    return given.replace(/\/+$/, "").replace(/\/v2$/, "");
  }

  private apiKey(): string {
    this.key ??=
      this.options.apiKey ??
      resolveApiKey({
        env: this.env,
        cwd: this.options.cwd,
        home: this.options.home,
        log: this.log,
      }).key;
    return this.key;
  }

  /** Connection failures and 408/429/502/503/504 are retried; consecutive failures open the endpoint's breaker. */
  private http(): HttpClient {
    if (this.httpOf) return this.httpOf;
    const { url } = this.resolve();
    this.httpOf = new HttpClient({
      retry: this.retry,
      fetch: this.options.fetch,
      retryStatus: (status) => RETRYABLE_STATUS.has(status),
      circuit: {
        breaker: (this.options.breakers ?? DEFAULT_BREAKERS).for(
          url,
          this.log.child({ subject: "circuit-breaker" }),
        ),
        openError: (retryInMs, failures) =>
          new CircuitOpenError(this.name, url, Math.ceil(retryInMs / 1000), failures),
      },
      onRetry: (request, reason, attempt, wait) =>
        this.resourceLog().warn(
          `${request.what} failed (attempt ${attempt}/${this.retry.attempts}): ${reason}; retrying in ${wait} ms`,
        ),
      unreachable: (_request, cause) => new EndpointConnectionError(this.name, url, cause),
    });
    return this.httpOf;
  }

  private resourceLog(): Logger {
    return this.log.child({ subject: `Endpoint:${this.name}` });
  }

  private jobLog(jobId: string): Logger {
    return this.log.child({ subject: `Job:${jobId}` });
  }
}

/**
 * A client for the endpoint with this id (or these options); `endpoint<typeof app>(id)`, with
 * `import type * as app from "./handler.js"`, types its calls by the app (TypedEndpoint).
 */
export function endpoint<App = unknown>(
  idOrOptions: string | EndpointClientOptions,
  options: EndpointClientOptions = {},
): ClientOf<App> {
  const client = new EndpointClient(
    typeof idOrOptions === "string" ? { ...options, id: idOrOptions } : idOrOptions,
  );
  // The typed client is this object seen through the app's types.
  return client as ClientOf<App>;
}

/**
 * A client for a Pod's app: by the name `flash deploy --pod` recorded, or by its proxy URL
 * (`https://<pod_id>-<port>.proxy.runpod.net`); a load-balanced app's routes as on an endpoint.
 */
export function pod<App = unknown>(nameOrUrl: string, options: EndpointClientOptions = {}): ClientOf<App> {
  const client = new EndpointClient(
    /^https?:\/\//.test(nameOrUrl) ? { ...options, url: nameOrUrl } : { ...options, pod: nameOrUrl },
  );
  return client as ClientOf<App>;
}

/** Where a load-balanced endpoint's routes are: `<id>.api.runpod.ai` on RunPod, `/lb/<id>` on the local platform. */
function routesUrlOf(base: string, id: string): string {
  const host = new URL(base);
  if (host.hostname === "api.runpod.ai") return `${host.protocol}//${id}.api.runpod.ai`;
  return `${base}/lb/${encodeURIComponent(id)}`;
}

/** Refuses a request body over the platform's limit before it is sent. */
function checkSize(body: string, endpointName: string): void {
  const bytes = Buffer.byteLength(body);
  if (bytes > MAX_PAYLOAD_BYTES) throw new PayloadTooLargeError(bytes, MAX_PAYLOAD_BYTES, endpointName);
}

/** The `error` field of a JSON error body, else the text. */
function errorText(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: unknown };
    return typeof parsed.error === "string" ? parsed.error : text;
  } catch {
    return text;
  }
}

/** The id a URL names: its last path segment, or the host's first label (`https://<id>.api.runpod.ai`). */
function lastSegment(url: string): string {
  const parsed = new URL(url);
  const segment = decodeURIComponent(parsed.pathname.replace(/\/+$/, "").split("/").pop() ?? "");
  return segment || parsed.hostname.split(".")[0] || "";
}

function baseOf(url: string): string {
  return url.replace(/\/v2\/[^/]+$/, "");
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
