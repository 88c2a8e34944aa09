// upload(): bytes, a stream or a file to an S3-compatible bucket, answered with a presigned GET URL.
// node:crypto and node:fs/promises load on the first upload (the global crypto, process.getBuiltinModule):
// `import "flash-worker"` is on every worker's start path, and most workers never upload.
import { createReadStream } from "node:fs";
import { extname } from "node:path";
import type { Readable } from "node:stream";
import { ArgumentError } from "../../flash-error.js";
import { currentJob } from "../../job/scope.js";
import { tracing } from "../../trace/index.js";
import { type BucketTarget, resolveBucket, UploadError } from "./bucket.js";

export { hasBucket, UploadError } from "./bucket.js";

/** What upload() takes: bytes, a Node or web stream, or the path of a file. */
export type UploadData = Uint8Array | ArrayBuffer | Readable | ReadableStream<Uint8Array> | string;

export interface UploadOptions {
  /** Object key; default `<job id>/<random>` with the file's extension. */
  key?: string;
  /** Default: from the key's or file's extension, else application/octet-stream. */
  contentType?: string;
  /** How long the returned URL works, in seconds: 1 to 604800 (7 days, the default and SigV4's limit). */
  expiresIn?: number;
}

export interface UploadedFile {
  /** A presigned GET URL: anyone holding it can read the object until it expires, without credentials. */
  url: string;
  key: string;
  bucket: string;
}

/** A week, as runpod-python presigns, which is also the longest SigV4 allows. */
const MAX_EXPIRES_S = 604_800;
/** Bodies over one part go up in 8 MiB parts (S3's minimum is 5 MiB), four at a time. */
const PART_BYTES = 8 * 1024 * 1024;
const PARTS_AT_ONCE = 4;
/** Tries per request, the SDK's standard mode backing off between them (runpod-python: boto's max_attempts 3). */
export const UPLOAD_ATTEMPTS = 3;

const TYPES: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".gif": "image/gif",
  ".svg": "image/svg+xml",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".wav": "audio/wav",
  ".mp3": "audio/mpeg",
  ".json": "application/json",
  ".txt": "text/plain; charset=utf-8",
  ".pdf": "application/pdf",
  ".zip": "application/zip",
};
const EXTENSIONS = new Map(Object.entries(TYPES).map(([ext, type]) => [type, ext]));

/** The SDK's own switch for its NodeVersionSupportWarning, read when a client is made. */
const SDK_NODE_WARNING = "AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED";

/**
 * Makes the SDK client without its NodeVersionSupportWarning (Node < 22): a note about the SDK's future
 * support, not about the job, that would land in every job log. Other warnings still show.
 */
function quietly<T>(make: () => T): T {
  const before = process.env[SDK_NODE_WARNING];
  process.env[SDK_NODE_WARNING] = "true";
  try {
    return make();
  } finally {
    if (before === undefined) delete process.env[SDK_NODE_WARNING];
    else process.env[SDK_NODE_WARNING] = before;
  }
}

/**
 * Uploads `data` to the job's s3Config bucket when the request carried one, else to the bucket of
 * BUCKET_ENDPOINT_URL, and returns a presigned GET URL for it (rp_upload's upload_in_memory_object).
 * Requests are retried on 5xx answers and dropped connections; then an UploadError says what failed.
 */
export async function upload(data: UploadData, options: UploadOptions = {}): Promise<UploadedFile> {
  // Tracing on: an "upload" span, a child of the handler's.
  if (!tracing) return uploadNow(data, options);
  return tracing.span("upload", {}, () => uploadNow(data, options));
}

async function uploadNow(data: UploadData, options: UploadOptions): Promise<UploadedFile> {
  const expiresIn = options.expiresIn ?? MAX_EXPIRES_S;
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > MAX_EXPIRES_S) {
    throw new ArgumentError(
      `upload: expiresIn must be whole seconds from 1 to ${MAX_EXPIRES_S}, got ${expiresIn}`,
    );
  }
  if (options.key !== undefined && (typeof options.key !== "string" || options.key === "")) {
    throw new ArgumentError("upload: key must be a non-empty string");
  }
  const target = resolveBucket();
  const body = await openBody(data);
  const fileExt = typeof data === "string" ? extname(data) : "";
  const contentType =
    options.contentType ??
    TYPES[extname(options.key ?? "").toLowerCase() || fileExt.toLowerCase()] ??
    "application/octet-stream";
  const key = target.prefix + (options.key ?? defaultKey(fileExt || (EXTENSIONS.get(contentType) ?? "")));

  // Loaded on first use, so workers that never upload never pay for the SDK.
  const [{ S3Client, GetObjectCommand }, { Upload }, { getSignedUrl }] = await Promise.all([
    import("@aws-sdk/client-s3"),
    import("@aws-sdk/lib-storage"),
    import("@aws-sdk/s3-request-presigner"),
  ]);
  const client = quietly(
    () =>
      new S3Client({
        endpoint: target.endpoint,
        region: target.region,
        forcePathStyle: target.pathStyle,
        credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
        maxAttempts: UPLOAD_ATTEMPTS,
        // S3-compatible services (and older MinIO, R2, s3rver) refuse the SDK's default trailing checksums.
        requestChecksumCalculation: "WHEN_REQUIRED",
        responseChecksumValidation: "WHEN_REQUIRED",
      }),
  );
  const abortController = new AbortController();
  const signal = currentJob()?.signal;
  const onAbort = () => abortController.abort(signal?.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await new Upload({
      client,
      params: { Bucket: target.bucket, Key: key, Body: body, ContentType: contentType },
      partSize: PART_BYTES,
      queueSize: PARTS_AT_ONCE,
      abortController,
    }).done();
    const url = await getSignedUrl(client, new GetObjectCommand({ Bucket: target.bucket, Key: key }), {
      expiresIn,
    });
    return { url, key, bucket: target.bucket };
  } catch (err) {
    throw explain(err, target, key);
  } finally {
    signal?.removeEventListener("abort", onAbort);
    client.destroy();
  }
}

async function openBody(data: UploadData): Promise<Uint8Array | Readable | ReadableStream<Uint8Array>> {
  if (typeof data === "string") {
    const info = await fsPromises()
      .stat(data)
      .catch(() => undefined);
    if (!info?.isFile()) throw new UploadError(`upload: no file at ${data}`);
    return createReadStream(data);
  }
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (data instanceof Uint8Array) return data;
  if (
    typeof (data as Readable).pipe === "function" ||
    typeof (data as ReadableStream).getReader === "function"
  ) {
    return data;
  }
  throw new ArgumentError(
    "upload: data must be bytes (Uint8Array, Buffer, ArrayBuffer), a stream or a file path",
  );
}

function defaultKey(ext: string): string {
  const id = currentJob()?.job.id;
  const name = `${crypto.randomUUID()}${ext}`;
  return id ? `${id}/${name}` : name;
}

interface SdkError {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number; attempts?: number };
}

/** The SDK's failure, said in the platform's words: what was refused or unreachable, and after how many tries. */
function explain(err: unknown, target: BucketTarget, key: string): Error {
  const e = (err ?? {}) as SdkError;
  const where = `${target.endpoint} (bucket "${target.bucket}", from ${target.source})`;
  const status = e.$metadata?.httpStatusCode;
  const tries = e.$metadata?.attempts ?? 1;
  const detail = `${e.name ?? "Error"}: ${e.message ?? String(err)}`;
  if (e.name === "AbortError") return new UploadError(`upload: ${key} stopped: the job ended`);
  if (e.name === "NoSuchBucket")
    return new UploadError(`upload: bucket "${target.bucket}" does not exist at ${target.endpoint}`);
  if (
    status === 401 ||
    status === 403 ||
    ["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"].includes(e.name ?? "")
  ) {
    return new UploadError(`upload: ${where} refused the credentials (${detail})`);
  }
  if (status === undefined || status >= 500) {
    const what = status === undefined ? "could not reach" : `kept failing (HTTP ${status}) at`;
    return new UploadError(
      `upload: ${what} ${where} after ${tries} ${tries === 1 ? "try" : "tries"}: ${detail}`,
    );
  }
  return new UploadError(`upload: ${where} refused ${key} (HTTP ${status}, ${detail})`);
}

function fsPromises(): typeof import("node:fs/promises") {
  return process.getBuiltinModule("node:fs/promises");
}
