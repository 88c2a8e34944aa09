// The worker's platform client for --rp_serve_api: the worker API as calls into the local platform in this process.
import { STATUS_CODES } from "node:http";
import { isFlashError } from "../../flash-error.js";
import { type JsonTooDeepError, parseJson } from "../../http/json.js";
import type { RawJob } from "../../job/types.js";
import {
  bodyTooLarge,
  type HttpError,
  RESULT_BODY_LIMIT,
  STREAM_BODY_LIMIT,
  tooDeepBody,
  type WorkerCalls,
} from "../../platform/index.js";
import type { ProtocolConfig } from "../config/options.js";
import { type PlatformClient, PlatformHttpError, type SerializedResult, type TakeResult } from "./client.js";
import { type PlatformUrls, platformUrls, UNHEALTHY_REASON_MAX } from "./urls.js";

/** What the HTTP route would have answered, as the error the HTTP client throws for it. */
function refused(err: unknown, url: string): never {
  if (!isFlashError(err, "HTTP_STATUS")) throw err;
  const { status, message } = err as HttpError;
  throw new PlatformHttpError(status, STATUS_CODES[status] ?? "", JSON.stringify({ error: message }), url);
}

/**
 * The same take → run → report as over HTTP, without the sockets. Every body still goes through JSON,
 * with the platform's size limits, so the handler and the platform see exactly what the wire would carry
 * (a copy, not shared objects) and refusals reach the worker as the same PlatformHttpError.
 */
export class InProcessPlatformClient implements PlatformClient {
  readonly urls: PlatformUrls;

  constructor(
    private readonly calls: WorkerCalls,
    platform: ProtocolConfig,
  ) {
    this.urls = platformUrls(platform);
  }

  async take(count: number, jobInProgress: boolean, signal: AbortSignal): Promise<TakeResult> {
    const url = this.urls.take(count, jobInProgress);
    try {
      const { json } = await this.calls.take(count, signal);
      // A copy, as the wire would deliver: a handler that changes its input cannot change the platform's job.
      return { jobs: JSON.parse(`[${json.join(",")}]`) as RawJob[], rejected: [] };
    } catch (err) {
      return refused(err, url);
    }
  }

  done(jobId: string, result: SerializedResult, isStream: boolean): Promise<void> {
    return this.post("done", this.urls.done(jobId, isStream), jobId, result.json, isStream);
  }

  stream(jobId: string, output: unknown): Promise<void> {
    return this.post("stream", this.urls.stream(jobId), jobId, JSON.stringify({ output }), false);
  }

  progress(jobId: string, output: unknown): Promise<void> {
    const text = JSON.stringify({ status: "IN_PROGRESS", output });
    return this.post("done", this.urls.done(jobId, false), jobId, text, false);
  }

  async stopSignals(signal: AbortSignal): Promise<string[]> {
    try {
      return await this.calls.stops(signal);
    } catch (err) {
      return refused(err, this.urls.stop ?? "");
    }
  }

  async ping(jobIds: readonly string[]): Promise<number> {
    try {
      this.calls.ping(undefined, jobIds);
      return 200;
    } catch (err) {
      if (!isFlashError(err, "HTTP_STATUS")) throw err;
      return (err as HttpError).status;
    }
  }

  /** A bound field, not a method: start.ts hands it on its own to the fitness checks and the warm-up. */
  readonly reportUnhealthy = async (check: string, reason: string): Promise<void> => {
    try {
      this.calls.ping(`${check}: ${reason.slice(0, UNHEALTHY_REASON_MAX)}`);
    } catch {
      // Best effort, as over HTTP: the exit that follows is the guarantee.
    }
  };

  /** A job-done or job-stream post of a JSON text: refused over the route's size and depth limits as the route would. */
  private async post(
    route: "done" | "stream",
    url: string,
    jobId: string,
    text: string,
    isStream: boolean,
  ): Promise<void> {
    const limit = route === "done" ? RESULT_BODY_LIMIT : STREAM_BODY_LIMIT;
    if (Buffer.byteLength(text) > limit) {
      const error = bodyTooLarge(limit, new URL(url).pathname);
      throw new PlatformHttpError(413, STATUS_CODES[413] ?? "", JSON.stringify({ error }), url);
    }
    let body: unknown;
    try {
      body = parseJson(text);
    } catch (err) {
      if (!isFlashError(err, "JSON_TOO_DEEP")) throw err;
      const error = tooDeepBody(err as JsonTooDeepError);
      throw new PlatformHttpError(400, STATUS_CODES[400] ?? "", JSON.stringify({ error }), url);
    }
    try {
      this.calls.post(route, jobId, body, isStream, Buffer.byteLength(text));
    } catch (err) {
      refused(err, url);
    }
  }
}
