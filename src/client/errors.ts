// The endpoint client's failures, one class per condition of the interface document's "Errors" table.
// Messages are API (docs/design.md §4.4): tests assert them.
import { type ErrorCode, FlashError, type HttpStatusFields } from "../flash-error.js";
import { describeFailure } from "../http/client.js";

/** Every error the endpoint client throws; `endpoint` names the endpoint it was calling. */
export class EndpointError extends FlashError {
  readonly code: ErrorCode = "ENDPOINT_ERROR";
  override name = "EndpointError";
  constructor(
    message: string,
    readonly endpoint: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The endpoint could not be reached (connection refused or reset, DNS, TLS) even after retries. */
export class EndpointConnectionError extends EndpointError {
  override readonly code = "ENDPOINT_UNREACHABLE";
  override name = "EndpointConnectionError";
  constructor(
    endpoint: string,
    readonly url: string,
    cause: unknown,
  ) {
    super(`Failed to connect to endpoint ${endpoint} (${url}): ${describeFailure(cause)}`, endpoint, {
      cause,
    });
  }
}

/** A non-2xx answer: the message names the endpoint, the code and the reason. */
export class EndpointHttpError extends EndpointError implements HttpStatusFields {
  override readonly code = "ENDPOINT_HTTP";
  override name = "EndpointHttpError";
  constructor(
    endpoint: string,
    readonly status: number,
    readonly statusText: string,
    readonly body: string,
    readonly url: string,
  ) {
    const detail = errorDetail(body);
    super(
      `HTTP error from endpoint ${endpoint}: ${status} ${statusText}${detail ? `: ${detail}` : ""}`,
      endpoint,
    );
  }
}

/** The endpoint does not exist yet (never deployed, or still provisioning), so it has no URL to call. */
export class EndpointNotDeployedError extends EndpointError {
  override readonly code = "ENDPOINT_NOT_DEPLOYED";
  override name = "EndpointNotDeployedError";
  constructor(endpoint: string, detail: string) {
    super(
      `Endpoint URL not available for ${endpoint}: ${detail}. Deploy it first (flash deploy) or wait for provisioning to finish.`,
      endpoint,
    );
  }
}

/** A queue call on a load-balanced endpoint, or a route call on a queue-based one. */
export class EndpointKindError extends EndpointError {
  override readonly code = "ENDPOINT_KIND_MISMATCH";
  override name = "EndpointKindError";
  constructor(
    endpoint: string,
    readonly kind: "queue" | "load-balanced",
    attempted: string,
  ) {
    super(
      kind === "load-balanced"
        ? `Endpoint ${endpoint} is load-balanced: it serves HTTP routes, not jobs, so ${attempted} cannot reach it. Call a route instead: post("/path", body), get("/path"), put, patch or delete.`
        : `Endpoint ${endpoint} is queue-based: it takes jobs, not HTTP routes, so ${attempted} cannot reach it. Send it a job instead: run(input) or runsync(input).`,
      endpoint,
    );
  }
}

/**
 * The job did not finish in time: the client's wait ran out, or the platform timed the job out; or a route
 * of a load-balanced endpoint ran past its execution timeout (then `route` names the call, e.g. "POST /x").
 */
export class ExecutionTimeoutError extends EndpointError {
  override readonly code = "EXECUTION_TIMEOUT";
  override name = "ExecutionTimeoutError";
  constructor(
    endpoint: string,
    readonly seconds: number,
    readonly jobId?: string,
    readonly route?: string,
  ) {
    super(
      route
        ? `Execution timeout on ${endpoint} after ${formatSeconds(seconds)}s (${route}). Raise executionTimeoutMs on the endpoint, make the route faster, or use a queue-based endpoint.`
        : `Execution timeout on ${endpoint} after ${formatSeconds(seconds)}s${jobId ? ` (job ${jobId})` : ""}. Raise executionTimeoutMs on the endpoint, make the handler faster, or use run() and poll.`,
      endpoint,
    );
  }
}

/** The answer was not the JSON the client expected. */
export class DeserializeError extends EndpointError {
  override readonly code = "DESERIALIZE_FAILED";
  override name = "DeserializeError";
  constructor(endpoint: string, cause: unknown) {
    super(
      `Failed to deserialize result from endpoint ${endpoint}: ${describeFailure(cause)}. Return simple JSON types (objects, arrays, strings, numbers, booleans, null).`,
      endpoint,
      { cause },
    );
  }
}

/** Calls fail fast while the endpoint's circuit breaker is open. */
export class CircuitOpenError extends EndpointError {
  override readonly code = "CIRCUIT_OPEN";
  override name = "CircuitOpenError";
  constructor(
    endpoint: string,
    readonly url: string,
    readonly retryInSeconds: number,
    failures: number,
  ) {
    super(
      `Circuit breaker open for endpoint ${endpoint} (${url}) after ${failures} consecutive failures. Retry in ${retryInSeconds} seconds.`,
      endpoint,
    );
  }
}

/** The job ended FAILED or CANCELLED; `job` is its last status. */
export class JobFailedError extends EndpointError {
  override readonly code = "JOB_FAILED";
  override name = "JobFailedError";
  constructor(
    endpoint: string,
    readonly job: { id: string; status: string; error?: unknown },
  ) {
    const reason =
      job.error === undefined
        ? ""
        : `: ${typeof job.error === "string" ? job.error : JSON.stringify(job.error)}`;
    super(`Job ${job.id} on endpoint ${endpoint} ended ${job.status}${reason}`, endpoint);
  }
}

const formatSeconds = (seconds: number): string =>
  Number.isInteger(seconds) ? String(seconds) : seconds.toFixed(1);

/** The platform's `{"error": "..."}` body, or the start of whatever else was sent. */
function errorDetail(body: string): string {
  try {
    const parsed = JSON.parse(body) as unknown;
    if (typeof parsed === "object" && parsed !== null && "error" in parsed) {
      const { error } = parsed as { error: unknown };
      return typeof error === "string" ? error : JSON.stringify(error);
    }
  } catch {
    // Not JSON: shown as text below.
  }
  return body.trim().slice(0, 300);
}
