// A handler's failure as runpod-python reports it: the error payload, its JSON text, Python truthiness.
import { stackText } from "../log/stack.js";
import { VERSION } from "../version.js";
import type { WorkerIdentity } from "./types.js";

/** The fields of runpod-python's handler-exception payload, in its order (docs/protocol.md §4.2). */
export interface HandlerErrorInfo {
  error_type: string;
  error_message: string;
  error_traceback: string;
  hostname: string;
  worker_id: string;
  runpod_version: string;
  /** Set when the error stands for an HTTP answer (a model server's 4xx): the platform answers with it as it was. */
  upstream_status?: number;
  upstream_content_type?: string;
  upstream_body?: string;
}

/** The HTTP answer an error stands for: app/model-server's ServerHttpError carries the server's own. */
export interface UpstreamAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** The answer an error carries in its `upstream` property, checked field by field (any copy of the package). */
function upstreamOf(err: unknown): UpstreamAnswer | undefined {
  const upstream = (err as { upstream?: Partial<UpstreamAnswer> } | null)?.upstream;
  if (typeof upstream !== "object" || upstream === null) return undefined;
  const { status, contentType, body } = upstream;
  if (!Number.isInteger(status) || typeof contentType !== "string" || typeof body !== "string")
    return undefined;
  return { status: status as number, contentType, body };
}

/** Python writes `<class 'ValueError'>`; we keep that shape with the JS class name so parsers of it still work. */
function errorType(err: unknown): string {
  if (err instanceof Error) return `<class '${err.name || err.constructor.name}'>`;
  return `<class '${err === null ? "null" : typeof err}'>`;
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "string") return err;
  try {
    return JSON.stringify(err) ?? String(err);
  } catch {
    return String(err);
  }
}

export function describeHandlerError(err: unknown, worker: WorkerIdentity): HandlerErrorInfo {
  const stack = stackText(err, `${errorType(err)}: ${errorMessage(err)}`);
  const info: HandlerErrorInfo = {
    error_type: errorType(err),
    error_message: errorMessage(err),
    error_traceback: stack,
    hostname: worker.hostname,
    worker_id: worker.workerId,
    runpod_version: VERSION,
  };
  const upstream = upstreamOf(err);
  if (!upstream) return info;
  return {
    ...info,
    upstream_status: upstream.status,
    upstream_content_type: upstream.contentType,
    upstream_body: upstream.body,
  };
}

/** The `error` string of a result: JSON text with Python's `json.dumps` separators, as the platform receives it. */
export function encodeHandlerError(info: HandlerErrorInfo): string {
  const parts = Object.entries(info).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  return `{${parts.join(", ")}}`;
}

/** Python truthiness, which decides whether a returned `error` or `refresh_worker` key counts. */
export function truthy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (value instanceof Map || value instanceof Set) return value.size > 0;
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.keys(value).length > 0;
  }
  return true;
}
