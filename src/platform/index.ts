// The local platform: the serverless endpoint API on localhost (docs/design.md §3). It never imports src/worker.

export { curlCommand, shellQuote } from "./curl.js";
export type { EndpointConfig } from "./endpoint.js";
export type { EndpointInfo, EndpointInit } from "./endpoint-init.js";
export {
  bodyTooLarge,
  HttpError,
} from "./http.js";
export { newApiKey } from "./ids.js";
export type { JobRecord, JobStatus, JobView, Retention } from "./jobs.js";
export type { LbEndpointInfo, LbEndpointInit } from "./lb-proxy.js";
export { WorkerPool } from "./pool.js";
export { type CatalogGpu, DEFAULT_GPU_CATALOG } from "./rest/catalog.js";
export { defaultWorkerCommand, type Platform, type PlatformOptions, startPlatform } from "./server.js";
export {
  RESULT_BODY_LIMIT,
  STREAM_BODY_LIMIT,
  type TakenJob,
  takenJob,
  type WorkerCalls,
} from "./worker-calls.js";
