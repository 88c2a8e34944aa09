// The worker's platform client for --rp_serve_api: the worker API as calls into the local platform in this process.
import { STATUS_CODES } from "node:http";
import { isFlashError } from "../../errors.js";
import type { RawJob } from "../../job/types.js";
import {
  bodyTooLarge,
  type HttpError,
  RESULT_BODY_LIMIT,
  STREAM_BODY_LIMIT,
  takenJob,
  type WorkerCalls,
} from "../../platform/index.js";
import type { ProtocolConfig } from "../options.js";
import { type PlatformClient, PlatformHttpError } from "./client.js";
import { platformUrls, UNHEALTHY_REASON_MAX } from "./urls.js";

/**
 * The same take → run → report as over HTTP, without the sockets. Every body still goes through JSON,
 * with the platform's size limits, so the handler and the platform see exactly what the wire would carry
 * (a copy, not shared objects) and refusals reach the worker as the same PlatformHttpError.
 */
export function inProcessClient(calls: WorkerCalls, platform: ProtocolConfig): PlatformClient {
  const urls = platformUrls(platform);

  /** What the HTTP route would have answered, as the error the HTTP client throws for it. */
  const refused = (err: unknown, url: string): never => {
    if (!isFlashError(err, "HTTP_STATUS")) throw err;
    const { status, message } = err as HttpError;
    throw new PlatformHttpError(status, STATUS_CODES[status] ?? "", JSON.stringify({ error: message }), url);
  };

  async function post(
    route: "done" | "stream",
    url: string,
    jobId: string,
    body: unknown,
    isStream: boolean,
  ): Promise<void> {
    const text = JSON.stringify(body);
    const limit = route === "done" ? RESULT_BODY_LIMIT : STREAM_BODY_LIMIT;
    if (Buffer.byteLength(text) > limit) {
      const error = bodyTooLarge(limit, new URL(url).pathname);
      throw new PlatformHttpError(413, STATUS_CODES[413] ?? "", JSON.stringify({ error }), url);
    }
    try {
      calls.post(route, jobId, JSON.parse(text), isStream, Buffer.byteLength(text));
    } catch (err) {
      refused(err, url);
    }
  }

  return {
    urls,

    async take(count, jobInProgress, signal) {
      const url = urls.take(count, jobInProgress);
      try {
        const jobs = await calls.take(count, signal);
        // A copy, as the wire would deliver: a handler that changes its input cannot change the platform's job.
        return { jobs: JSON.parse(JSON.stringify(jobs.map(takenJob))) as RawJob[], rejected: [] };
      } catch (err) {
        return refused(err, url);
      }
    },

    done: (jobId, result, isStream) => post("done", urls.done(jobId, isStream), jobId, result, isStream),

    stream: (jobId, output) => post("stream", urls.stream(jobId), jobId, { output }, false),

    progress: (jobId, output) =>
      post("done", urls.done(jobId, false), jobId, { status: "IN_PROGRESS", output }, false),

    async stopSignals(signal) {
      try {
        return await calls.stops(signal);
      } catch (err) {
        return refused(err, urls.stop ?? "");
      }
    },

    async ping(jobIds) {
      try {
        calls.ping(undefined, jobIds);
        return 200;
      } catch (err) {
        if (!isFlashError(err, "HTTP_STATUS")) throw err;
        return (err as HttpError).status;
      }
    },

    async reportUnhealthy(check, reason) {
      try {
        calls.ping(`${check}: ${reason.slice(0, UNHEALTHY_REASON_MAX)}`);
      } catch {
        // Best effort, as over HTTP: the exit that follows is the guarantee.
      }
    },
  };
}
