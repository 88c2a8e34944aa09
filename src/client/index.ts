// flash-worker/client: call serverless endpoints from TypeScript (run, runsync, status, stream, cancel,
// health, purgeQueue; get/post/put/patch/delete on load-balanced routes), with retries, a circuit breaker per endpoint, and the toolkit's credentials lookup.
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
  CONNECT_RETRY,
  DEFAULT_TIMEOUT_MS,
  EndpointClient,
  type EndpointClientOptions,
  type EndpointHealth,
  endpoint,
  type JobOptions,
  type JobOutput,
  type JobStatus,
  MAX_PAYLOAD_BYTES,
  POLL_BACKOFF,
  type RouteMethod,
  type WaitOptions,
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
  PayloadTooLargeError,
} from "./errors.js";
