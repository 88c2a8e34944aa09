// The worker's side of the platform protocol: the PlatformClient interface, its answers and its errors.
import { FlashError, type HttpStatusFields, isFlashError } from "../../flash-error.js";
import type { JobResult, RawJob } from "../../job/types.js";
import type { PlatformUrls } from "./urls.js";

/** The platform answered 429: wait before asking again (docs/protocol.md §3.2). */
export class TooManyRequests extends FlashError {
  readonly code = "PLATFORM_TOO_MANY_REQUESTS";
  override name = "TooManyRequests";
}

/** By code, as every check of our errors is (two copies of the package may be loaded). */
export const isPlatformHttpError = (err: unknown): err is PlatformHttpError =>
  isFlashError(err, "PLATFORM_HTTP");

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

/** A job's result and its JSON, serialized once: sized against the limits, then posted as these very bytes. */
export interface SerializedResult {
  readonly result: JobResult;
  readonly json: string;
}

export const serializeResult = (result: JobResult): SerializedResult => ({
  result,
  json: JSON.stringify(result),
});

export interface TakeResult {
  jobs: RawJob[];
  rejected: RejectedJob[];
}

/**
 * The worker's side of the protocol (docs/protocol.md §3): take, done, stream, progress, stop, ping.
 * Two implementations: HttpPlatformClient (./http-client.ts) over the wire, and InProcessPlatformClient
 * (./in-process-client.ts), calls into the local platform in this process for --rp_serve_api.
 */
export interface PlatformClient {
  readonly urls: PlatformUrls;
  /** Job take (§3.2): up to `count` jobs, long-polled; `jobInProgress` says whether this worker runs any now. */
  take(count: number, jobInProgress: boolean, signal: AbortSignal): Promise<TakeResult>;
  /** Job done (§3.4): posts the final result's JSON as it is, retrying transient failures within `bound`. */
  done(jobId: string, result: SerializedResult, isStream: boolean, bound?: DeliveryBound): Promise<void>;
  /** Job stream (§3.5): posts one stream chunk, retrying transient failures within `bound`. */
  stream(jobId: string, output: unknown, bound?: DeliveryBound): Promise<void>;
  /** Progress (§3.6): an IN_PROGRESS post to the result URL. */
  progress(jobId: string, output: unknown): Promise<void>;
  /** Job stop (§3.3): the ids of the jobs the platform stopped, long-polled. */
  stopSignals(signal: AbortSignal): Promise<string[]>;
  /** Heartbeat (§3.7): one ping naming the jobs in flight; resolves with the answer's status. */
  ping(jobIds: readonly string[], timeoutMs: number): Promise<number>;
  /** Fitness-failure report (§3.8): one best-effort GET telling the platform a check failed; never throws. */
  reportUnhealthy(check: string, reason: string, timeoutMs: number): Promise<void>;
}
