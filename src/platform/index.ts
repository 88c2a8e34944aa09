// The local platform: the serverless endpoint API on localhost (docs/design.md §3). It never imports the worker (src/runtime/) or the toolkit (src/cli/).

export { bodyTooLarge, HttpError, tooDeepBody } from "./api/http.js";
export {
  RESULT_BODY_LIMIT,
  STREAM_BODY_LIMIT,
  type TakenJob,
  takenJob,
  type WorkerCalls,
} from "./api/worker-calls.js";
export { curlCommand, shellQuote } from "./curl.js";
export { type CatalogGpu, DEFAULT_GPU_CATALOG } from "./rest/catalog.js";
export {
  defaultWorkerCommand,
  type Platform,
  type PlatformOptions,
  startPlatform,
  WORKER_STOP_GRACE_MS,
} from "./server.js";
export type { EndpointConfig } from "./state/endpoint.js";
export type { EndpointInfo, EndpointInit } from "./state/endpoint-init.js";
export { newApiKey } from "./state/ids.js";
export type { JobRecord, JobStatus, JobView, Retention } from "./state/jobs.js";
export type { LbEndpointInfo, LbEndpointInit } from "./workers/lb-proxy.js";
export { WorkerPool } from "./workers/pool.js";
