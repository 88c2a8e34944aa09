// Outputs over the platform's result limit, checked before the result is posted: offloaded to the bucket when
// the handler opted in (offloadOutput), else a FAILED job that names the limit and the way out (docs/protocol.md §11.2).

import { runInJobScope } from "../../job/scope.js";
import type { JobResult, RawJob } from "../../job/types.js";
import { describeError, type Logger } from "../../log/index.js";
import { type SerializedResult, serializeResult } from "./client.js";

const MB = 1024 * 1024;
/** A /run job's result limit: the worker cannot tell a /run job from a /runsync one, so this is where offload starts. */
export const OFFLOAD_OVER_BYTES = 10 * MB;
/** The largest result the platform takes (/runsync's 20 MB): anything larger fails before it is sent. */
export const RESULT_LIMIT_BYTES = 20 * MB;

/** MB as the platform counts them (10 MB = 10,485,760 bytes in the interface document's limits). */
export const megabytes = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;

const LIMITS = "the platform's result limit (/run 10 MB, /runsync 20 MB)";
const NO_BUCKET =
  "set BUCKET_ENDPOINT_URL (http(s)://host/bucket), BUCKET_ACCESS_KEY_ID and BUCKET_SECRET_ACCESS_KEY, or send s3Config with the request";

/** The way out, appended to a refusal the platform gave a large result. */
export const LARGE_OUTPUT_ADVICE =
  "Return less, or upload the output (upload()) and return its URL; handler(fn, { offloadOutput: true }) does that for you when a bucket is configured";

export interface FitOptions {
  offload: boolean;
  signal: AbortSignal;
  log: Logger;
}

/**
 * The result as it can be posted, serialized once (the JSON sized here is the body posted): unchanged when small
 * enough; with `offload`, a large output is uploaded as `<job id>/output.json` and replaced by
 * `{output_url, output_bytes}`; past 20 MB without it, an error result. Never a silent empty success.
 */
export async function fitResult(
  raw: RawJob,
  result: JobResult,
  options: FitOptions,
): Promise<SerializedResult> {
  const serialized = serializeResult(result);
  if (result.output === undefined || result.error !== undefined) return serialized;
  const bytes = Buffer.byteLength(serialized.json);
  if (bytes <= OFFLOAD_OVER_BYTES) return serialized;
  if (!options.offload && bytes <= RESULT_LIMIT_BYTES) return serialized;
  return serializeResult(await replaceLarge(raw, result, megabytes(bytes), options));
}

/** A result too large to post as it is: offloaded to the bucket, or an error result naming the limit. */
async function replaceLarge(
  raw: RawJob,
  result: JobResult,
  size: string,
  options: FitOptions,
): Promise<JobResult> {
  if (!options.offload) {
    return keep(result, { error: `Job output is ${size}, over ${LIMITS}. ${LARGE_OUTPUT_ADVICE}.` });
  }
  // Loaded only for a large output: workers that never offload never load the S3 client.
  const { hasBucket, upload } = await import("../files/upload.js");
  return runInJobScope(raw, options.signal, options.log, async () => {
    if (!hasBucket()) {
      return keep(result, {
        error: `Job output is ${size}, over ${LIMITS}, and offloadOutput has no bucket to upload it to: ${NO_BUCKET}.`,
      });
    }
    const body = Buffer.from(JSON.stringify(result.output));
    try {
      const { url } = await upload(body, { key: `${raw.id}/output.json`, contentType: "application/json" });
      options.log.info(`Output of ${size} uploaded to the bucket (offloadOutput); the job returns its URL.`);
      return { ...result, output: { output_url: url, output_bytes: body.length } };
    } catch (err) {
      return keep(result, {
        error: `Job output is ${size}, over ${LIMITS}; offloadOutput could not upload it: ${describeError(err)}`,
      });
    }
  });
}

/** An error result in place of `result`, keeping its stopPod. */
function keep(result: JobResult, replacement: JobResult): JobResult {
  return result.stopPod ? { ...replacement, stopPod: true } : replacement;
}
