// flash-worker/client: call serverless endpoints from TypeScript (run, runsync, status, stream, cancel,
// health, purgeQueue), with retries, a circuit breaker per endpoint, and the toolkit's credentials lookup.

export { type ErrorCode, FlashError, isFlashError, PayloadTooLargeError } from "../errors.js";
export { CONNECT_RETRY, POLL_BACKOFF, type RetryPolicy } from "../http/retry.js";
export {
  type Admission,
  BREAKER_DEFAULTS,
  type BreakerOptions,
  CircuitBreaker,
  CircuitBreakers,
  type CircuitState,
  type Clock,
  DEFAULT_BREAKERS,
} from "./breaker.js";
export {
  API_KEY_VARIABLES,
  type ApiKey,
  ApiKeyError,
  CredentialsFileError,
  credentialsPath,
  type KeyLookup,
  readCredentialsFile,
  resolveApiKey,
  saveApiKey,
} from "./credentials.js";
export { type DeployedEndpoint, type Deployments, readDeployments } from "./deployments.js";
export {
  DEFAULT_TIMEOUT_MS,
  EndpointClient,
  type EndpointClientOptions,
  type EndpointHealth,
  endpoint,
  type JobOptions,
  type JobOutput,
  type JobStatus,
  MAX_PAYLOAD_BYTES,
  type WaitOptions,
} from "./endpoint.js";
export {
  CircuitOpenError,
  DeserializeError,
  EndpointConnectionError,
  EndpointError,
  EndpointHttpError,
  EndpointNotDeployedError,
  ExecutionTimeoutError,
  JobFailedError,
} from "./errors.js";
