// The worker API's calls as functions: the HTTP routes (worker-api.ts) and an in-process worker (--rp_serve_api) share them.

import { isFlashError } from "../../flash-error.js";
import type { EndpointState } from "../state/endpoint.js";
import type { JobRecord } from "../state/jobs.js";
import type { PostOutcome, ResultBody, Scheduler } from "../state/scheduler.js";
import type { PlatformContext } from "./context.js";
import { formatBytes, HttpError, MB } from "./http.js";

/** A result may be as large as a /runsync answer; one stream chunk at most 1 MB (docs/protocol.md §11). */
export const RESULT_BODY_LIMIT = 20 * MB;
export const STREAM_BODY_LIMIT = 1 * MB;
/** A /run job's result: 10 MB ("Payload limits", serverless/workers/handler-functions). */
export const RUN_RESULT_LIMIT = 10 * MB;

/** The job object a worker receives: what the platform sends on job-take, the request's fields kept (docs/protocol.md §4.1). */
export interface TakenJob {
  id: string;
  input: unknown;
  webhook?: string;
  s3Config?: Record<string, string>;
}

export const takenJob = (job: JobRecord): TakenJob => ({
  id: job.id,
  input: job.input,
  webhook: job.webhook,
  s3Config: job.s3Config,
});

/** The jobs one job-take hands out, each with the JSON the worker receives (`json[i]` is `jobs[i]`'s). */
export interface TakenJobs {
  jobs: JobRecord[];
  json: string[];
}

/** Each job as its worker receives it; one that cannot be written as JSON fails here instead of breaking the answer. */
function handOut(scheduler: Scheduler, endpoint: EndpointState, jobs: JobRecord[]): TakenJobs {
  const taken: TakenJobs = { jobs: [], json: [] };
  for (const job of jobs) {
    let json: string;
    try {
      json = JSON.stringify(takenJob(job));
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      scheduler.undeliverable(endpoint, job, `The job could not be written as JSON for its worker: ${why}`);
      continue;
    }
    taken.jobs.push(job);
    taken.json.push(json);
  }
  return taken;
}

/** What job-done and job-stream answer: the job's status, and `ignored` for a harmless repeat. */
export interface PostAnswer {
  id: string;
  status: string;
  ignored?: true;
}

/** One worker's calls on one endpoint; each throws an HttpError where the HTTP route answers that status. */
export interface WorkerCalls {
  /** job-take: up to `max` jobs, held up to the long-poll time for the first. */
  take(max: number, signal: AbortSignal): Promise<TakenJobs>;
  /**
   * job-done (`"done"`) or job-stream (`"stream"`) with the body exactly as posted (`bytes`: its size, when known;
   * `cost`: what it holds in memory, its size unless the parser measured more).
   */
  post(
    route: "done" | "stream",
    jobId: string,
    body: unknown,
    isStream: boolean,
    bytes?: number,
    cost?: number,
  ): PostAnswer;
  /** job-stop: the ids of this worker's jobs that were cancelled or timed out. */
  stops(signal: AbortSignal): Promise<string[]>;
  /** ping: liveness, a fitness failure, or the list of jobs the worker holds. */
  ping(unhealthy?: string, jobIds?: readonly string[]): void;
}

/** The worker calls of `workerId` on `endpointId`, through the same scheduler the HTTP routes use. */
export function workerCalls(ctx: PlatformContext, endpointId: string, workerId: string): WorkerCalls {
  const { scheduler } = ctx;
  const endpoint = (): EndpointState => {
    const found = scheduler.endpoint(endpointId);
    if (!found) throw new HttpError(404, `Endpoint ${endpointId} not found`);
    return found;
  };
  return {
    async take(max, signal) {
      const ep = endpoint();
      const release = scheduler.seen(ep, workerId, true);
      try {
        return handOut(scheduler, ep, await scheduler.take(ep, workerId, max, ctx.longPollMs, signal));
      } finally {
        release();
      }
    },
    post(route, jobId, body, isStream, bytes, cost = bytes ?? 0) {
      const ep = endpoint();
      scheduler.seen(ep, workerId);
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw new HttpError(400, 'The body must be a JSON object such as {"output": ...}');
      }
      const job = scheduler.jobs.get(jobId);
      if (!job || job.endpointId !== ep.id) throw new HttpError(404, `Job ${jobId} not found`);
      if (route === "done" && !job.sync && bytes !== undefined && bytes > RUN_RESULT_LIMIT) {
        throw new HttpError(
          413,
          `The ${formatBytes(bytes)} result of job ${jobId} is over the ${formatBytes(RUN_RESULT_LIMIT)} limit of a /run job's result (/runsync: ${formatBytes(RESULT_BODY_LIMIT)})`,
        );
      }
      const outcome: PostOutcome =
        route === "done"
          ? scheduler.done(ep, workerId, job, body as ResultBody, isStream, cost)
          : streamChunk(scheduler, ep, workerId, job, body as ResultBody, cost);
      if (outcome === "not-held") {
        throw new HttpError(409, `Worker ${workerId} does not hold job ${jobId} (status ${job.status})`);
      }
      if (outcome === "conflict") {
        throw new HttpError(409, `Job ${jobId} already has a different final result; the first one stands`);
      }
      return { id: job.id, status: job.status, ignored: outcome === "ignored" ? true : undefined };
    },
    async stops(signal) {
      const ep = endpoint();
      const release = scheduler.seen(ep, workerId, true);
      try {
        return await scheduler.stopPoll(ep, workerId, ctx.longPollMs, signal);
      } finally {
        release();
      }
    },
    ping(unhealthy, jobIds) {
      scheduler.ping(endpoint(), workerId, unhealthy, jobIds);
    },
  };
}

/** A stream chunk the memory budget has no room for is refused for good (413): the worker then fails its job. */
function streamChunk(
  scheduler: Scheduler,
  endpoint: EndpointState,
  workerId: string,
  job: JobRecord,
  body: ResultBody,
  cost: number,
): PostOutcome {
  try {
    return scheduler.streamChunk(endpoint, workerId, job, body, cost);
  } catch (err) {
    if (isFlashError(err, "PLATFORM_MEMORY_FULL")) throw new HttpError(413, err.message);
    throw err;
  }
}
