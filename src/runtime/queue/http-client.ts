// The worker's HTTP client to the platform: take, done, stream, progress, stop and ping, with retries.
import { arch, platform as osPlatform, release } from "node:os";
import {
  describeFailure,
  type HttpAnswer,
  HttpClient,
  type HttpRequest,
  neverSent,
} from "../../http/client.js";
import { platformTransport } from "../../http/h1.js";
import {
  DELIVERY_RETRY,
  type Outcome,
  PING_RETRY,
  PROGRESS_RETRY,
  type RetryPolicy,
} from "../../http/retry.js";
import { type Transport, transportFor, type WireAnswer } from "../../http/wire.js";
import type { RawJob } from "../../job/types.js";
import type { Logger } from "../../log/index.js";
import { tracing } from "../../trace/index.js";
import { VERSION } from "../../version.js";
import type { ProtocolConfig } from "../config/options.js";
import {
  type DeliveryBound,
  DeliveryError,
  type PlatformClient,
  PlatformHttpError,
  type RejectedJob,
  type SerializedResult,
  type TakeResult,
  TooManyRequests,
} from "./client.js";
import { fitsRequestIdHeader, refusedJobId } from "./job-ids.js";
import { type PlatformUrls, platformUrls } from "./urls.js";

export interface ClientOptions {
  platform: ProtocolConfig;
  log: Logger;
  fetch?: typeof fetch;
  /** Result and stream posts (DELIVERY_RETRY: no count, bounded by the caller's DeliveryBound). */
  retry?: RetryPolicy;
  /** Progress posts (PROGRESS_RETRY). */
  progressRetry?: RetryPolicy;
  pingRetry?: RetryPolicy;
  /** Deadline of one long-poll (job-take, job-stop): 90 s as in runpod-python. */
  pollTimeoutMs?: number;
  /** Deadline of one result/stream/progress attempt. */
  postTimeoutMs?: number;
}

export const USER_AGENT = `flash-worker/${VERSION} (${osPlatform()} ${release()}; ${arch()}) Language/Node.js ${process.versions.node}`;

const POLL_TIMEOUT_MS = 90_000;
const POST_TIMEOUT_MS = 60_000;

function validateJob(value: unknown): { job: RawJob } | { rejected: RejectedJob } {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { rejected: { reason: `Job is not a JSON object: ${JSON.stringify(value)?.slice(0, 200)}` } };
  }
  const job = value as Record<string, unknown>;
  const id = typeof job.id === "string" && job.id.length > 0 ? job.id : undefined;
  // An id no URL can name is refused without an id to answer; one the URL can name is answered with the reason.
  const refused = id === undefined ? undefined : refusedJobId(id);
  if (refused)
    return { rejected: refused.answerable ? { id, reason: refused.reason } : { reason: refused.reason } };
  if (!id || !("input" in job)) {
    const missing = [!id && "id", !("input" in job) && "input"].filter(Boolean).join(" and ");
    return { rejected: { id, reason: `Job has missing field(s): ${missing}.` } };
  }
  return { job: job as RawJob };
}

/** Any 5xx, not only the gateway ones: what runpod-python's result posts retry (docs/protocol.md §12). */
const isRetryable = (status: number) => status >= 500 || status === 429 || status === 408;

/** Whether a failed attempt may still have been recorded by the platform (its answer lost, or a 5xx after it). */
function mayBeRecorded(outcome: Outcome<HttpAnswer>): boolean {
  return outcome.ok ? outcome.value.response.status >= 500 : !neverSent(outcome.error);
}

/** One post's failed attempts so far, as the retries saw them. */
interface Tally {
  failures: number;
  mayBeRecorded: boolean;
  /** The answer the last retry was for: a stop during that retry's wait ends the post on it, already counted. */
  retried?: HttpAnswer;
}

/**
 * The worker's side of the protocol over HTTP (docs/protocol.md §3): runpod-python's headers and bodies, long
 * polls for job-take and job-stop, and the retry policies of each post (§3.4 for results and stream chunks).
 */
export class HttpPlatformClient implements PlatformClient {
  readonly urls: PlatformUrls;
  private readonly platform: ProtocolConfig;
  private readonly log: Logger;
  private readonly pollTimeoutMs: number;
  private readonly postTimeoutMs: number;
  private readonly sessionHeaders: Record<string, string>;
  /** A post's headers but its X-Request-ID, built once. */
  private readonly postHeaders: Record<string, string>;
  /** Each post's failed attempts, filled in by the retries' onRetry. */
  private readonly tallies = new WeakMap<HttpRequest, Tally>();
  /** Result and stream posts. */
  private readonly deliveries: HttpClient;
  private readonly progressPosts: HttpClient;
  private readonly pings: HttpClient;
  /** Long polls go straight to the transport: one attempt whose backoff the job loop owns. */
  private readonly transport: Transport;
  /** Our HTTP/1.1, or node:http with FLASH_HTTP_TRANSPORT=node. */
  private readonly wire: Transport;

  constructor(options: ClientOptions) {
    this.platform = options.platform;
    this.wire = platformTransport(this.platform.transport);
    this.log = options.log;
    this.pollTimeoutMs = options.pollTimeoutMs ?? POLL_TIMEOUT_MS;
    this.postTimeoutMs = options.postTimeoutMs ?? POST_TIMEOUT_MS;
    this.urls = platformUrls(this.platform);
    this.sessionHeaders = {
      "Content-Type": "application/json",
      Authorization: this.platform.apiKey,
      "User-Agent": USER_AGENT,
    };
    // Raw JSON under a form content type and a bogus `charset` header: what the platform accepts (docs/protocol.md §12.1).
    this.postHeaders = {
      ...this.sessionHeaders,
      "Content-Type": "application/x-www-form-urlencoded",
      charset: "utf-8",
    };
    this.deliveries = this.postClient(options.retry ?? DELIVERY_RETRY, options.fetch);
    this.progressPosts = this.postClient(options.progressRetry ?? PROGRESS_RETRY, options.fetch);
    this.pings = new HttpClient({
      retry: options.pingRetry ?? PING_RETRY,
      fetch: options.fetch,
      wire: this.wire,
      retryStatus: isRetryable,
    });
    this.transport = transportFor(options.fetch, this.wire);
  }

  async take(count: number, jobInProgress: boolean, signal: AbortSignal): Promise<TakeResult> {
    const { log } = this;
    const url = this.urls.take(count, jobInProgress);
    // Guarded: the message is built per take, and at INFO it would be dropped.
    if (log.level === "DEBUG" || log.level === "TRACE") log.debug(`Taking ${count} job(s): ${url}`);
    const { response, text } = await this.get(url, signal);
    if (response.status === 204) return { jobs: [], rejected: [] };
    if (response.status === 400) {
      log.debug("Received 400 from job-take: no job (expected when FlashBoot is enabled).");
      return { jobs: [], rejected: [] };
    }
    if (response.status === 429) throw new TooManyRequests("job-take answered 429 Too Many Requests");
    if (!response.ok) throw new PlatformHttpError(response.status, response.statusText, text, url);
    const type = response.headers.get("content-type") ?? "";
    if (!type.includes("application/json") || text.length === 0) {
      log.debug(`job-take answered without a JSON body (${type || "no content type"}): no job.`);
      return { jobs: [], rejected: [] };
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      log.debug("job-take answered with malformed JSON: no job.");
      return { jobs: [], rejected: [] };
    }
    const items = Array.isArray(body) ? body : [body];
    const result: TakeResult = { jobs: [], rejected: [] };
    for (const item of items) {
      const checked = validateJob(item);
      if ("job" in checked) result.jobs.push(checked.job);
      else result.rejected.push(checked.rejected);
    }
    return result;
  }

  done(jobId: string, result: SerializedResult, isStream: boolean, bound?: DeliveryBound): Promise<void> {
    const url = this.urls.done(jobId, isStream);
    return this.post(this.deliveries, url, jobId, result.json, "Result post", bound);
  }

  stream(jobId: string, output: unknown, bound?: DeliveryBound): Promise<void> {
    const body = JSON.stringify({ output });
    return this.post(this.deliveries, this.urls.stream(jobId), jobId, body, "Stream post", bound);
  }

  progress(jobId: string, output: unknown): Promise<void> {
    return this.post(
      this.progressPosts,
      this.urls.done(jobId, false),
      jobId,
      JSON.stringify({ status: "IN_PROGRESS", output }),
      "Progress post",
    );
  }

  async stopSignals(signal: AbortSignal): Promise<string[]> {
    const { log } = this;
    const url = this.urls.stop;
    if (!url) return [];
    const { response, text } = await this.get(url, signal);
    if (response.status === 204) return [];
    if (response.status === 429) throw new TooManyRequests("job-stop answered 429 Too Many Requests");
    if (!response.ok) throw new PlatformHttpError(response.status, response.statusText, text, url);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      log.warn("job-stop answered with a body that is not JSON; ignoring it.");
      return [];
    }
    const ids = (body as { jobsToStop?: unknown } | null)?.jobsToStop;
    if (!Array.isArray(ids)) {
      log.warn("job-stop answer has no jobsToStop list; ignoring it.");
      return [];
    }
    const valid = ids.filter((id): id is string => typeof id === "string");
    if (valid.length !== ids.length)
      log.warn("job-stop answer has entries that are not strings; dropped them.");
    return valid;
  }

  async ping(jobIds: readonly string[], timeoutMs: number): Promise<number> {
    const url = this.urls.ping(jobIds, VERSION);
    if (!url) return 0;
    // Only Authorization, as runpod-python's ping sends (docs/protocol.md §3.7).
    const { response } = await this.pings.send({
      method: "GET",
      url,
      headers: { Authorization: this.platform.apiKey },
      timeoutMs,
      what: "Ping",
    });
    return response.status;
  }

  /** A bound field, not a method: start.ts hands it on its own to the fitness checks and the warm-up. */
  readonly reportUnhealthy = async (check: string, reason: string, timeoutMs: number): Promise<void> => {
    const url = this.urls.unhealthy(check, reason, VERSION);
    if (!url || !this.platform.apiKey) return;
    try {
      const response = await this.pings.open({
        method: "GET",
        url,
        headers: { Authorization: this.platform.apiKey },
        timeoutMs,
        what: "Unhealthy report",
      });
      await response.arrayBuffer();
      if (!response.ok) this.log.debug(`Unhealthy report answered ${response.status}`);
    } catch (err) {
      // Best effort: the exit that follows is the guarantee, not this report.
      this.log.debug(`Unhealthy report failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  /** A long-poll GET; resolves with the status and the whole body, so the deadline covers both. */
  private get(url: string, signal: AbortSignal): Promise<WireAnswer> {
    return this.transport({
      method: "GET",
      url,
      headers: this.sessionHeaders,
      timeoutMs: this.pollTimeoutMs,
      signal,
    });
  }

  /**
   * Posts a JSON body with the headers runpod-python sends (docs/protocol.md §3.4), retrying 5xx, 408, 429 and
   * connection errors within `bound`; throws DeliveryError when they outlast it, PlatformHttpError on a refusal.
   */
  private async post(
    via: HttpClient,
    url: string,
    jobId: string,
    body: string,
    what: string,
    bound: DeliveryBound = {},
  ): Promise<void> {
    const request: HttpRequest = {
      method: "POST",
      url,
      headers: fitsRequestIdHeader(jobId) ? { ...this.postHeaders, "X-Request-ID": jobId } : this.postHeaders,
      body,
      timeoutMs: this.postTimeoutMs,
      stopRetrying: bound.stop,
      retryDeadline: bound.deadline,
      what,
      id: jobId,
    };
    const tally: Tally = { failures: 0, mayBeRecorded: false };
    this.tallies.set(request, tally);
    const answer = await via.send(request);
    const { response, text } = answer;
    if (response.ok) return;
    const error = new PlatformHttpError(response.status, response.statusText, text, url, tally.mayBeRecorded);
    // Still failing when the retries stopped: undelivered, as when the connection kept dropping.
    if (isRetryable(response.status)) {
      const attempts = answer === tally.retried ? tally.failures : tally.failures + 1;
      throw new DeliveryError(`${what} for job ${jobId} failed after ${attempts} attempts: ${error.message}`);
    }
    throw error;
  }

  /**
   * The shared HTTP client with one of the worker's post policies, no breaker (the platform is the only target,
   * and giving up on it is the job loop's call, not a circuit's).
   */
  private postClient(policy: RetryPolicy, doFetch: typeof fetch | undefined): HttpClient {
    const { log, tallies } = this;
    return new HttpClient({
      retry: policy,
      fetch: doFetch,
      wire: this.wire,
      retryStatus: isRetryable,
      onRetry: (request, failure, attempt, wait, outcome) => {
        const tally = tallies.get(request);
        if (tally) {
          tally.failures = attempt;
          tally.mayBeRecorded ||= mayBeRecorded(outcome);
          tally.retried = outcome.ok ? outcome.value : undefined;
        }
        const of = Number.isFinite(policy.attempts) ? ` of ${policy.attempts}` : "";
        log.warn(`${request.what} failed (attempt ${attempt}${of}): ${failure}; retrying in ${wait} ms`, {
          jobId: request.id,
        });
        // An event on the post's span when tracing (the active span is the result or stream post's).
        tracing?.event("retry", { attempt, failure, "wait.ms": wait });
      },
      unreachable: (request, cause, attempts) =>
        new DeliveryError(
          `${request.what} for job ${request.id} failed after ${attempts} attempts: ${describeFailure(cause)}`,
        ),
    });
  }
}

/** The platform client of a worker that talks to the platform over the wire (start.ts, the heartbeat thread). */
export function createPlatformClient(options: ClientOptions): PlatformClient {
  return new HttpPlatformClient(options);
}
