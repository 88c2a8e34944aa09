// Where upload() sends files: the job's s3Config when the request carried one, else the BUCKET_* environment.

import { FlashError } from "../../flash-error.js";
import { currentJob } from "../../job/scope.js";
import { readFilesConfig } from "../config/options.js";

/** An S3-compatible bucket and the credentials to write to it. */
export interface BucketTarget {
  /** The service endpoint, without the bucket. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Path-style URLs (endpoint/bucket/key) rather than bucket.endpoint/key. */
  pathStyle: boolean;
  /** Prefix of every key (s3Config.objectPath). */
  prefix: string;
  /** Where the settings came from, for error messages. */
  source: "s3Config" | "BUCKET_ENDPOINT_URL";
}

export class UploadError extends FlashError {
  readonly code = "UPLOAD_FAILED";
  override name = "UploadError";
}

const NOT_CONFIGURED =
  "upload: no bucket configured: set BUCKET_ENDPOINT_URL (http(s)://host/bucket), BUCKET_ACCESS_KEY_ID and BUCKET_SECRET_ACCESS_KEY, or send s3Config with the request";

/** The request's `s3Config` as runpod-sdk sends it with /run. */
interface S3Config {
  accessId?: unknown;
  accessSecret?: unknown;
  bucketName?: unknown;
  endpointUrl?: unknown;
  objectPath?: unknown;
}

/** The region in an AWS or DigitalOcean endpoint's host name, as runpod-python reads it; us-east-1 otherwise. */
function regionOf(host: string): string {
  const aws = /(?:^|\.)s3[.-]([a-z0-9-]+)\.amazonaws\.com$/.exec(host)?.[1];
  if (aws && aws !== "external-1") return aws;
  const spaces = /(?:^|\.)([a-z0-9-]+)\.digitaloceanspaces\.com$/.exec(host)?.[1];
  return spaces ?? "us-east-1";
}

function parseUrl(text: string, source: string): URL {
  try {
    const url = new URL(text);
    if (url.protocol === "http:" || url.protocol === "https:") return url;
  } catch {
    // reported below
  }
  throw new UploadError(`upload: ${source} is not an http(s) URL: ${JSON.stringify(text)}`);
}

/** From the request's s3Config: the endpoint as given, the bucket named separately. */
function fromS3Config(config: S3Config): BucketTarget {
  const fields = ["accessId", "accessSecret", "bucketName", "endpointUrl"] as const;
  const missing = fields.filter((f) => typeof config[f] !== "string" || config[f] === "");
  if (missing.length > 0) {
    throw new UploadError(`upload: the request's s3Config lacks ${missing.join(", ")} (strings expected)`);
  }
  const url = parseUrl(config.endpointUrl as string, "s3Config.endpointUrl");
  const prefix = typeof config.objectPath === "string" ? config.objectPath.replace(/^\/+|\/+$/g, "") : "";
  return {
    endpoint: url.href.replace(/\/+$/, ""),
    bucket: config.bucketName as string,
    region: regionOf(url.hostname),
    accessKeyId: config.accessId as string,
    secretAccessKey: config.accessSecret as string,
    // Custom S3-compatible services (R2, MinIO, Spaces, B2) all take path-style; AWS prefers virtual hosts.
    pathStyle: !url.hostname.endsWith(".amazonaws.com"),
    prefix: prefix ? `${prefix}/` : "",
    source: "s3Config",
  };
}

/**
 * From BUCKET_ENDPOINT_URL, which names the bucket too: as the last path segment
 * (`http://127.0.0.1:9000/my-bucket`) or as the first host label (`https://my-bucket.s3.us-west-2.amazonaws.com`).
 */
function fromEnvironment(): BucketTarget {
  const { endpointUrl, accessKeyId, secretAccessKey } = readFilesConfig().bucket;
  if (!endpointUrl && !accessKeyId && !secretAccessKey) throw new UploadError(NOT_CONFIGURED);
  const missing = [
    ["BUCKET_ENDPOINT_URL", endpointUrl],
    ["BUCKET_ACCESS_KEY_ID", accessKeyId],
    ["BUCKET_SECRET_ACCESS_KEY", secretAccessKey],
  ]
    .filter(([, value]) => !value)
    .map(([name]) => name);
  if (missing.length > 0)
    throw new UploadError(`upload: ${missing.join(" and ")} not set (the bucket needs all three)`);
  const url = parseUrl(endpointUrl as string, "BUCKET_ENDPOINT_URL");
  const segments = url.pathname.split("/").filter(Boolean);
  const common = {
    region: regionOf(url.hostname),
    accessKeyId: accessKeyId as string,
    secretAccessKey: secretAccessKey as string,
    prefix: "",
    source: "BUCKET_ENDPOINT_URL" as const,
  };
  if (segments.length > 0) {
    const bucket = decodeURIComponent(segments.pop() as string);
    const path = segments.length > 0 ? `/${segments.join("/")}` : "";
    return { ...common, endpoint: `${url.origin}${path}`, bucket, pathStyle: true };
  }
  const labels = url.hostname.split(".");
  if (labels.length < 3 || /^[\d.]+$|^\[/.test(url.hostname)) {
    throw new UploadError(
      `upload: BUCKET_ENDPOINT_URL must name the bucket: http(s)://host/bucket or https://bucket.host, got ${endpointUrl}`,
    );
  }
  const [bucket, ...rest] = labels;
  const port = url.port ? `:${url.port}` : "";
  return {
    ...common,
    endpoint: `${url.protocol}//${rest.join(".")}${port}`,
    bucket: bucket!,
    pathStyle: false,
  };
}

/** The bucket upload() writes to now: the current job's s3Config first, then the environment. */
export function resolveBucket(): BucketTarget {
  const s3Config = currentJob()?.job.s3Config;
  if (s3Config !== undefined && s3Config !== null) {
    if (typeof s3Config !== "object")
      throw new UploadError("upload: the request's s3Config must be an object");
    return fromS3Config(s3Config as S3Config);
  }
  return fromEnvironment();
}

/** True when upload() has a bucket to write to: the job's s3Config, or the BUCKET_* environment. */
export function hasBucket(): boolean {
  const s3Config = currentJob()?.job.s3Config;
  if (s3Config !== undefined && s3Config !== null) return true;
  const { endpointUrl, accessKeyId, secretAccessKey } = readFilesConfig().bucket;
  return Boolean(endpointUrl && accessKeyId && secretAccessKey);
}
