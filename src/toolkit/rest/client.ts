// RunPod's REST API v2 (https://api.runpod.io, or the local platform): serverless endpoints, their workers and
// logs, registry credentials and the GPU catalog. Bearer key; connection failures and 429/5xx on reads retried
// with backoff; consecutive failures open the API's circuit breaker (all through src/http/client.ts).

import { FlashError, type HttpStatusFields, isFlashError } from "../../flash-error.js";
import { type CircuitBreakers, DEFAULT_BREAKERS } from "../../http/breaker.js";
import { describeFailure, type HttpAnswer, HttpClient, RETRYABLE_STATUS } from "../../http/client.js";
import { CONNECT_RETRY, type RetryPolicy } from "../../http/retry.js";
import { readSse } from "../../http/sse.js";
import type { Logger } from "../../log/index.js";
import { VERSION } from "../../version.js";
import type {
  CreateEndpointRequest,
  CreatePodRequest,
  GpuCatalogType,
  ListEndpointWorkersResponse,
  ProblemBody,
  Registry,
  RestEndpoint,
  RestPod,
  UpdateEndpointRequest,
  UpdatePodRequest,
  WorkerLogEvent,
} from "./types.js";

/** RunPod's API base. */
export const DEFAULT_API_URL = "https://api.runpod.io";
/** Where `flash serve` and `flash dev` listen by default. */
export const LOCAL_PLATFORM_URL = "http://127.0.0.1:8000";
/** One request's deadline (SSE log streams excepted). */
const REQUEST_TIMEOUT_MS = 60_000;
const USER_AGENT = `flash-worker-deploy/${VERSION} Node.js/${process.versions.node}`;

/** The API could not be reached, even after retries. */
export class ApiConnectionError extends FlashError {
  readonly code = "API_UNREACHABLE";
  override name = "ApiConnectionError";
}

/** The API answered with an error: its ErrorResponse (`title`, `detail`, `errors`) kept for the message. */
export class ApiError extends FlashError implements HttpStatusFields {
  readonly code = "API_HTTP";
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly body: string,
    readonly url: string,
    readonly method: string,
    readonly path: string,
    readonly problem: ProblemBody,
  ) {
    super(describeProblem(status, problem));
  }
}

/** Whether `err` is an ApiError from any copy of the package (checked by code, as every FlashError is). */
export function isApiError(err: unknown): err is ApiError {
  return isFlashError(err, "API_HTTP");
}

/** "401 Unauthorized: missing bearer token (field: gpu.pools)" from an ErrorResponse. */
export function describeProblem(status: number, problem: ProblemBody): string {
  const fields = problem.errors?.length ? ` (${problem.errors.join("; ")})` : "";
  const detail = problem.detail && problem.detail !== problem.title ? `: ${problem.detail}` : "";
  return `${status} ${problem.title}${detail}${fields}`;
}

export interface RestClientOptions {
  /** API base, e.g. https://api.runpod.io; a trailing slash or `/v2` is dropped. */
  url: string;
  apiKey: string;
  log?: Logger;
  fetch?: typeof fetch;
  retry?: RetryPolicy;
  breakers?: CircuitBreakers;
}

type Method = "GET" | "POST" | "PATCH" | "DELETE";

export interface LogStreamOptions {
  tail?: number;
  follow?: boolean;
  signal?: AbortSignal;
  onEvent: (event: WorkerLogEvent) => void;
}

export class RestClient {
  readonly url: string;
  private readonly http: HttpClient;

  constructor(private readonly options: RestClientOptions) {
    const url = options.url.replace(/\/+$/, "").replace(/\/v2$/, "");
    const retry = options.retry ?? CONNECT_RETRY;
    this.url = url;
    this.http = new HttpClient({
      retry,
      fetch: options.fetch,
      retryStatus: (status) => RETRYABLE_STATUS.has(status),
      circuit: {
        breaker: (options.breakers ?? DEFAULT_BREAKERS).for(url, options.log),
        openError: (retryInMs, failures) =>
          new ApiConnectionError(
            `Circuit breaker open for the API at ${url} after ${failures} consecutive failures. Retry in ${Math.ceil(retryInMs / 1000)} seconds.`,
          ),
      },
      onRetry: (request, why, attempt, ms) =>
        options.log?.warn(
          `${request.what} attempt ${attempt}/${retry.attempts} failed: ${why}. Retrying in ${ms} ms`,
        ),
      unreachable: (_request, cause) =>
        new ApiConnectionError(`Failed to connect to the API at ${url}: ${describeFailure(cause)}`),
    });
  }

  /** The key it sends (deploy's smoke request goes to the endpoint with it). */
  get apiKey(): string {
    return this.options.apiKey;
  }

  listEndpoints(): Promise<RestEndpoint[]> {
    return this.call<{ endpoints: RestEndpoint[] }>("GET", "/v2/serverless").then((r) => r.endpoints);
  }

  getEndpoint(id: string): Promise<RestEndpoint> {
    return this.call("GET", `/v2/serverless/${encodeURIComponent(id)}`);
  }

  createEndpoint(body: CreateEndpointRequest): Promise<RestEndpoint> {
    return this.call("POST", "/v2/serverless", body);
  }

  updateEndpoint(id: string, body: UpdateEndpointRequest): Promise<RestEndpoint> {
    return this.call("PATCH", `/v2/serverless/${encodeURIComponent(id)}`, body);
  }

  async deleteEndpoint(id: string): Promise<void> {
    await this.call("DELETE", `/v2/serverless/${encodeURIComponent(id)}`);
  }

  listWorkers(id: string): Promise<ListEndpointWorkersResponse> {
    return this.call("GET", `/v2/serverless/${encodeURIComponent(id)}/workers`);
  }

  listRegistries(): Promise<Registry[]> {
    return this.call<{ registries: Registry[] }>("GET", "/v2/registries").then((r) => r.registries);
  }

  createRegistry(body: { name: string; username: string; password: string }): Promise<Registry> {
    return this.call("POST", "/v2/registries", body);
  }

  listPods(): Promise<RestPod[]> {
    return this.call<{ pods: RestPod[] }>("GET", "/v2/pods").then((r) => r.pods);
  }

  getPod(id: string): Promise<RestPod> {
    return this.call("GET", `/v2/pods/${encodeURIComponent(id)}`);
  }

  createPod(body: CreatePodRequest): Promise<RestPod> {
    return this.call("POST", "/v2/pods", body);
  }

  updatePod(id: string, body: UpdatePodRequest): Promise<RestPod> {
    return this.call("PATCH", `/v2/pods/${encodeURIComponent(id)}`, body);
  }

  async deletePod(id: string): Promise<void> {
    await this.call("DELETE", `/v2/pods/${encodeURIComponent(id)}`);
  }

  gpuTypes(): Promise<GpuCatalogType[]> {
    return this.call<{ gpus: GpuCatalogType[] }>("GET", "/v2/catalog/gpus").then((r) => r.gpus);
  }

  /**
   * A worker's log lines (SSE): the last `tail` lines, then, with `follow`, new ones until `signal` aborts.
   * Without `follow` it returns once the backlog has been read (the stream's first quiet moment).
   */
  workerLogs(endpointId: string, workerId: string, options: LogStreamOptions): Promise<void> {
    return this.logStream(
      `/v2/serverless/${encodeURIComponent(endpointId)}/workers/${encodeURIComponent(workerId)}/logs`,
      options,
    );
  }

  /** A Pod's log lines (SSE), as workerLogs reads a worker's. */
  podLogs(podId: string, options: LogStreamOptions): Promise<void> {
    return this.logStream(`/v2/pods/${encodeURIComponent(podId)}/logs`, options);
  }

  private async logStream(base: string, options: LogStreamOptions): Promise<void> {
    const path = `${base}?tail=${options.tail ?? 100}`;
    const controller = new AbortController();
    options.signal?.addEventListener("abort", () => controller.abort(), { once: true });
    // A stream is opened once, without a deadline: it lasts as long as the caller follows it.
    const response = await this.http.open({
      method: "GET",
      url: `${this.url}${path}`,
      headers: this.headers("text/event-stream", false),
      signal: controller.signal,
      what: `GET ${path}`,
    });
    if (!response.ok) {
      throw this.errorOf({ response, text: await response.text().catch(() => "") }, "GET", path);
    }
    if (!response.body) return;
    let quiet: NodeJS.Timeout | undefined;
    const settle = () => {
      clearTimeout(quiet);
      // The backlog arrives at once; a pause after it means we have it all.
      if (!options.follow) quiet = setTimeout(() => controller.abort(), 500);
    };
    settle();
    try {
      for await (const event of readSse(arriving(response.body, settle))) {
        if (event.data) options.onEvent(JSON.parse(event.data) as WorkerLogEvent);
      }
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    } finally {
      clearTimeout(quiet);
    }
  }

  private async call<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const answer = await this.http.send({
      method,
      url: `${this.url}${path}`,
      headers: this.headers("application/json", body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs: REQUEST_TIMEOUT_MS,
      what: `${method} ${path}`,
      // A create is not retried on an error answer: the endpoint may exist by then.
      idempotent: method !== "POST",
    });
    if (answer.response.ok) return (answer.text ? JSON.parse(answer.text) : undefined) as T;
    throw this.errorOf(answer, method, path);
  }

  private headers(accept: string, json: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.options.apiKey}`,
      Accept: accept,
      "User-Agent": USER_AGENT,
    };
    if (json) headers["Content-Type"] = "application/json";
    return headers;
  }

  private errorOf({ response, text }: HttpAnswer, method: string, path: string): ApiError {
    let problem: ProblemBody = { title: response.statusText || "Error", status: response.status, detail: "" };
    try {
      const parsed = JSON.parse(text) as Partial<ProblemBody> & { error?: unknown };
      problem = {
        title: typeof parsed.title === "string" ? parsed.title : problem.title,
        status: response.status,
        detail:
          typeof parsed.detail === "string"
            ? parsed.detail
            : typeof parsed.error === "string"
              ? parsed.error
              : "",
        ...(Array.isArray(parsed.errors) ? { errors: parsed.errors.map(String) } : {}),
      };
    } catch {
      problem.detail = text.trim().slice(0, 300);
    }
    return new ApiError(
      response.status,
      response.statusText,
      text,
      `${this.url}${path}`,
      method,
      path,
      problem,
    );
  }
}

/** The body's chunks as they come, telling `onChunk` of each: any byte, not only a whole event, is a sign of life. */
async function* arriving(body: AsyncIterable<Uint8Array>, onChunk: () => void): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    onChunk();
    yield chunk;
  }
}
