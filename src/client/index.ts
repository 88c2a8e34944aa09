// flash-worker/client: call serverless endpoints from TypeScript (run, runsync, status, stream, cancel,
// health, purgeQueue; get/post/put/patch/delete on load-balanced routes), and a Pod's app by name or proxy URL
// (pod()), with retries, a circuit breaker per endpoint, and the toolkit's credentials lookup.
// Only what users call: tuning constants and the CLI's helpers stay internal (test/api/ locks this surface).

export { type ErrorCode, FlashError, isFlashError, PayloadTooLargeError } from "../flash-error.js";
export {
  type Admission,
  type BreakerOptions,
  type CircuitBreaker,
  CircuitBreakers,
  type CircuitState,
  type Clock,
} from "../http/breaker.js";
export type { RetryPolicy } from "../http/retry.js";
export type { MessageSocket } from "../http/socket.js";
export {
  type ApiKey,
  ApiKeyError,
  CredentialsFileError,
  type KeyLookup,
  resolveApiKey,
} from "../project/credentials.js";
export type { TypedEndpoint } from "./contract.js";
export {
  EndpointClient,
  type EndpointClientOptions,
  type EndpointHealth,
  type EndpointSocket,
  endpoint,
  type JobOptions,
  type JobOutput,
  type JobStatus,
  pod,
  type RouteAnswer,
  type RouteMethod,
  type WaitOptions,
  type WorkerPin,
} from "./endpoint.js";
export {
  CircuitOpenError,
  DeserializeError,
  EndpointConnectionError,
  EndpointError,
  EndpointHttpError,
  EndpointKindError,
  EndpointNotDeployedError,
  ExecutionTimeoutError,
  JobFailedError,
} from "./errors.js";
