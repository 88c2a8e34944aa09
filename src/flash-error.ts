// The one error shape: every error flash-worker throws on purpose is a FlashError with a stable `code`, checked by
// code (isFlashError), never instanceof. The few plain Errors left are listed, each with its reason, in
// test/unit/layout/rules.test.ts, which fails on any other (docs/design.md §4.4).

/** Shared by every copy of the package loaded in one process, so isFlashError holds where instanceof would not. */
const BRAND = Symbol.for("flash-worker.error");

/** Stable codes, one per condition; a message may be reworded, a code is not. */
export type ErrorCode =
  // A call given a wrong argument or a name already taken (where JavaScript would throw a TypeError).
  | "ARGUMENT_INVALID"
  | "NAME_TAKEN"
  // Configuration and the user's project.
  | "CONFIG_INVALID"
  | "ENDPOINT_CONFIG_INVALID"
  | "LOAD_FAILED"
  | "BUILD_FAILED"
  | "API_KEY_MISSING"
  | "CREDENTIALS_FILE_INVALID"
  | "PROVISION_FAILED"
  // Payloads and remote functions.
  | "PICKLE_INVALID"
  | "PICKLE_GLOBAL_REFUSED"
  | "PAYLOAD_TOO_LARGE"
  | "DESERIALIZE_TIMEOUT"
  | "SERIALIZATION_FAILED"
  | "REMOTE_REQUEST_INVALID"
  | "JSON_TOO_DEEP"
  | "PY_TYPE_INVALID"
  | "TYPE_MISMATCH"
  | "OPENAI_INPUT_INVALID"
  | "OPENAI_ROUTE_NOT_FOUND"
  | "REMOTE_CALL_FAILED"
  // The worker and the platform it talks to.
  | "JOB_STOPPED"
  | "WORKER_SHUTDOWN"
  | "WORKER_STRAY_ERROR"
  | "PLATFORM_TOO_MANY_REQUESTS"
  | "PLATFORM_HTTP"
  | "PLATFORM_DELIVERY"
  | "PLATFORM_UNREACHABLE"
  | "MANAGEMENT_HTTP"
  | "HTTP_MALFORMED_ANSWER"
  | "HTTP_REQUEST_INVALID"
  | "SSE_EVENT_TOO_LARGE"
  | "HTTP_TIMEOUT"
  | "STREAM_CHUNK_TOO_LARGE"
  | "JOB_UNFINISHED"
  | "JOB_ENDED"
  | "ROUTE_ABORTED"
  // Deploying through the REST API, container tools and images.
  | "API_UNREACHABLE"
  | "API_HTTP"
  | "DEPLOY_FAILED"
  | "ENDPOINT_MAPPING_INVALID"
  | "IMAGE_FAILED"
  | "LIFECYCLE_FAILED"
  | "BENCH_FAILED"
  | "CONTAINER_TOOL_MISSING"
  | "CONTAINER_TOOL_FAILED"
  | "IMAGE_COMMAND_MISSING"
  | "HTTP_PROBLEM"
  // Handler-side helpers: input validation, files, GPUs, fitness checks.
  | "VALIDATION_FAILED"
  | "UPLOAD_FAILED"
  | "DOWNLOAD_FAILED"
  | "DOWNLOAD_REFUSED"
  | "MODEL_NOT_CACHED"
  | "GPU_DRIVER_NOT_FOUND"
  | "NVML_FAILED"
  | "CUDA_FAILED"
  | "GPU_CHECK_FAILED"
  | "GPU_PROBE_FAILED"
  | "NO_GPU"
  | "FITNESS_CHECK_FAILED"
  // A model server the worker runs beside its handler.
  | "SERVER_START_FAILED"
  | "SERVER_EXITED"
  | "SERVER_HTTP"
  // The local platform's own answers.
  | "HTTP_STATUS"
  | "PLATFORM_MEMORY_FULL"
  | "PLATFORM_CLOSING"
  // The endpoint client.
  | "ENDPOINT_ERROR"
  | "ENDPOINT_UNREACHABLE"
  | "ENDPOINT_HTTP"
  | "ENDPOINT_NOT_DEPLOYED"
  | "ENDPOINT_KIND_MISMATCH"
  | "EXECUTION_TIMEOUT"
  | "DESERIALIZE_FAILED"
  | "CIRCUIT_OPEN"
  | "JOB_FAILED";

/** The base of every error the project throws; subclasses fix `code` and `name`. */
export abstract class FlashError extends Error {
  abstract readonly code: ErrorCode;
  readonly [BRAND] = true;
}

/** Whether `value` is a FlashError (from any copy of the package), optionally one of the given codes. */
export function isFlashError(value: unknown, ...codes: ErrorCode[]): value is FlashError {
  if (typeof value !== "object" || value === null) return false;
  if ((value as { [BRAND]?: unknown })[BRAND] !== true) return false;
  return codes.length === 0 || codes.includes((value as FlashError).code);
}

/** A call given an argument of the wrong type or out of range: the message names the call and the argument. */
export class ArgumentError extends FlashError {
  readonly code = "ARGUMENT_INVALID";
  override name = "ArgumentError";
}

/** A name registered twice (a remote function, a fitness check, an endpoint id). */
export class NameTakenError extends FlashError {
  readonly code = "NAME_TAKEN";
  override name = "NameTakenError";
}

/** Any HTTP answer that was not 2xx: the same four fields whichever side met it. */
export interface HttpStatusFields {
  readonly status: number;
  readonly statusText: string;
  /** The answer's body as text (an `{"error"}` JSON body where the platform sent one). */
  readonly body: string;
  readonly url: string;
}

const megabytes = (bytes: number): string => (bytes / (1024 * 1024)).toFixed(1);

/**
 * A payload over its limit (interface document: "Payload size exceeds limit of 10.0 MB"): one base64
 * argument the decoder refuses, or a request the endpoint client refuses to send (then `endpoint` is set).
 */
export class PayloadTooLargeError extends FlashError {
  readonly code = "PAYLOAD_TOO_LARGE";
  override name = "PayloadTooLargeError";
  constructor(
    readonly bytes: number,
    readonly limit: number,
    readonly endpoint?: string,
  ) {
    // "the request is 10.0 MB" over a limit of 10.0 MB reads as no excess: then the sizes are shown in bytes.
    const sameRounded = megabytes(bytes) === megabytes(limit);
    super(
      endpoint === undefined
        ? `Payload size ${megabytes(bytes)} MB exceeds limit of ${megabytes(limit)} MB`
        : `Payload size exceeds limit of ${megabytes(limit)} MB${sameRounded ? ` (${limit} bytes)` : ""}: the request to ${endpoint} is ${sameRounded ? `${bytes} bytes` : `${megabytes(bytes)} MB`}. Use network volumes, compress, or split requests.`,
    );
  }
}
