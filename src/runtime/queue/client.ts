// The worker's HTTP client to the platform: take, done, stream, progress, stop and ping, with retries.
import { arch, platform as osPlatform, release } from "node:os";
import { FlashError, type HttpStatusFields } from "../../errors.js";
import {
  describeFailure,
  type HttpAnswer,
  HttpClient,
  type HttpRequest,
  neverSent,
} from "../../http/client.js";
import {
  DELIVERY_RETRY,
  type Outcome,
  PING_RETRY,
  PROGRESS_RETRY,
  type RetryPolicy,
} from "../../http/retry.js";
import { transportFor, type WireAnswer } from "../../http/wire.js";
import type { JobResult, RawJob } from "../../job/types.js";
import type { Logger } from "../../log/index.js";
import { tracing } from "../../trace/index.js";
import { VERSION } from "../../version.js";
import type { ProtocolConfig } from "../options.js";
import { type PlatformUrls, platformUrls } from "./urls.js";

/** The platform answered 429: wait before asking again (docs/protocol.md §3.2). */
export class TooManyRequests extends FlashError {
  readonly code = "PLATFORM_TOO_MANY_REQUESTS";
  override name = "TooManyRequests";
}

/** A non-2xx answer that retrying will not fix, or that retries did not fix. */
export class PlatformHttpError extends FlashError implements HttpStatusFields {
  readonly code = "PLATFORM_HTTP";
  override name = "PlatformHttpError";
  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly body: string,
    readonly url: string,
    /** An earlier attempt of the same post failed after it may have been recorded (a 5xx, a lost answer). */
    readonly earlierAttemptMayBeRecorded = false,
  ) {
    super(`${status} ${statusText}${body ? `: ${body.slice(0, 300)}` : ""}`);
  }
}

/** A post whose attempts kept failing on connection errors or 5xx answers until its bound ran out. */
export class DeliveryError extends FlashError {
  readonly code = "PLATFORM_DELIVERY";
  override name = "DeliveryError";
}

/** How long a result or stream post keeps trying through transient failures (docs/protocol.md §3.4). */
export interface DeliveryBound {
  /** Aborting ends the retries (the shutdown grace ran out, the job was stopped); an attempt under way finishes. */
  stop?: AbortSignal;
  /** No retry begins past this time (Date.now() ms): the delivery limit. */
  deadline?: number;
}

/** A job-take answer that carried something other than a job with `id` and `input`. */
export interface RejectedJob {
  id?: string;
  reason: string;
}

export interface TakeResult {
  jobs: RawJob[];
  rejected: RejectedJob[];
}

/** The worker's side of the protocol (docs/protocol.md §3): take, done, stream, progress, stop, ping. */
export interface PlatformClient {
  readonly urls: PlatformUrls;
  take(count: number, jobInProgress: boolean, signal: AbortSignal): Promise<TakeResult>;
  /** Posts the final result, retrying transient failures within `bound`. */
  done(jobId: string, result: JobResult, isStream: boolean, bound?: DeliveryBound): Promise<void>;
  /** Posts one stream chunk, retrying transient failures within `bound`. */
  stream(jobId: string, output: unknown, bound?: DeliveryBound): Promise<void>;
  progress(jobId: string, output: unknown): Promise<void>;
  stopSignals(signal: AbortSignal): Promise<string[]>;
  ping(jobIds: readonly string[], timeoutMs: number): Promise<number>;
  /** One best-effort GET telling the platform a fitness check failed; never throws (§3.8). */
  reportUnhealthy(check: string, reason: string, timeoutMs: number): Promise<void>;
}

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
}

export function createPlatformClient(options: ClientOptions): PlatformClient {
  const { platform, log } = options;
  const retry = options.retry ?? DELIVERY_RETRY;
  const progressRetry = options.progressRetry ?? PROGRESS_RETRY;
  const pingRetry = options.pingRetry ?? PING_RETRY;
  const pollTimeoutMs = options.pollTimeoutMs ?? POLL_TIMEOUT_MS;
  const postTimeoutMs = options.postTimeoutMs ?? POST_TIMEOUT_MS;
  const urls = platformUrls(platform);
  const sessionHeaders = {
    "Content-Type": "application/json",
    Authorization: platform.apiKey,
    "User-Agent": USER_AGENT,
  };

  // Result, stream and progress posts: the shared HTTP client with the worker's policies, no breaker (the platform
  // is the only target, and giving up on it is the job loop's call, not a circuit's).
  const tallies = new WeakMap<HttpRequest, Tally>();
  const postClient = (policy: RetryPolicy) =>
    new HttpClient({
      retry: policy,
      fetch: options.fetch,
      retryStatus: isRetryable,
      onRetry: (request, failure, attempt, wait, outcome) => {
        const tally = tallies.get(request);
        if (tally) {
          tally.failures = attempt;
          tally.mayBeRecorded ||= mayBeRecorded(outcome);
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
  const deliveries = postClient(retry);
  const progressPosts = postClient(progressRetry);
  const pings = new HttpClient({ retry: pingRetry, fetch: options.fetch, retryStatus: isRetryable });

  // Long polls go straight to the transport: one attempt whose backoff the job loop owns.
  const transport = transportFor(options.fetch);
  /** A long-poll GET; resolves with the status and the whole body, so the deadline covers both. */
  function get(url: string, signal: AbortSignal): Promise<WireAnswer> {
    return transport({ method: "GET", url, headers: sessionHeaders, timeoutMs: pollTimeoutMs, signal });
  }

  /**
   * Posts a JSON body with the headers runpod-python sends (docs/protocol.md §3.4), retrying 5xx, 408, 429 and
   * connection errors within `bound`; throws DeliveryError when they outlast it, PlatformHttpError on a refusal.
   */
  async function post(
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
      // Raw JSON under a form content type and a bogus `charset` header: what the platform accepts (docs/protocol.md §12.1).
      headers: {
        ...sessionHeaders,
        "Content-Type": "application/x-www-form-urlencoded",
        charset: "utf-8",
        "X-Request-ID": jobId,
      },
      body,
      timeoutMs: postTimeoutMs,
      stopRetrying: bound.stop,
      retryDeadline: bound.deadline,
      what,
      id: jobId,
    };
    const tally: Tally = { failures: 0, mayBeRecorded: false };
    tallies.set(request, tally);
    const { response, text } = await via.send(request);
    if (response.ok) return;
    const error = new PlatformHttpError(response.status, response.statusText, text, url, tally.mayBeRecorded);
    // Still failing when the retries stopped: undelivered, as when the connection kept dropping.
    if (isRetryable(response.status)) {
      throw new DeliveryError(
        `${what} for job ${jobId} failed after ${tally.failures + 1} attempts: ${error.message}`,
      );
    }
    throw error;
  }

  return {
    urls,

    async take(count, jobInProgress, signal) {
      const url = urls.take(count, jobInProgress);
      log.debug(`Taking ${count} job(s): ${url}`);
      const { response, text } = await get(url, signal);
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
    },

    done(jobId, result, isStream, bound) {
      return post(
        deliveries,
        urls.done(jobId, isStream),
        jobId,
        JSON.stringify(result),
        "Result post",
        bound,
      );
    },

    stream(jobId, output, bound) {
      return post(deliveries, urls.stream(jobId), jobId, JSON.stringify({ output }), "Stream post", bound);
    },

    progress(jobId, output) {
      return post(
        progressPosts,
        urls.done(jobId, false),
        jobId,
        JSON.stringify({ status: "IN_PROGRESS", output }),
        "Progress post",
      );
    },

    async stopSignals(signal) {
      if (!urls.stop) return [];
      const { response, text } = await get(urls.stop, signal);
      if (response.status === 204) return [];
      if (response.status === 429) throw new TooManyRequests("job-stop answered 429 Too Many Requests");
      if (!response.ok) throw new PlatformHttpError(response.status, response.statusText, text, urls.stop);
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
    },

    async ping(jobIds, timeoutMs) {
      const url = urls.ping(jobIds, VERSION);
      if (!url) return 0;
      // Only Authorization, as runpod-python's ping sends (docs/protocol.md §3.7).
      const { response } = await pings.send({
        method: "GET",
        url,
        headers: { Authorization: platform.apiKey },
        timeoutMs,
        what: "Ping",
      });
      return response.status;
    },

    async reportUnhealthy(check, reason, timeoutMs) {
      const url = urls.unhealthy(check, reason, VERSION);
      if (!url || !platform.apiKey) return;
      try {
        const response = await pings.open({
          method: "GET",
          url,
          headers: { Authorization: platform.apiKey },
          timeoutMs,
          what: "Unhealthy report",
        });
        await response.arrayBuffer();
        if (!response.ok) log.debug(`Unhealthy report answered ${response.status}`);
      } catch (err) {
        // Best effort: the exit that follows is the guarantee, not this report.
        log.debug(`Unhealthy report failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    },
  };
}
