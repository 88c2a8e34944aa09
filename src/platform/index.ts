// The local platform: the serverless endpoint API on localhost (docs/design.md §3). It never imports src/worker.

export { curlCommand, shellQuote } from "./curl.js";
export type { EndpointConfig } from "./endpoint.js";
export { newApiKey } from "./ids.js";
export type { JobRecord, JobStatus, JobView, Retention } from "./jobs.js";
export type { LbEndpointInfo, LbEndpointInit } from "./lb-proxy.js";
export type { EndpointInfo, EndpointInit } from "./management-api.js";
export { WorkerPool } from "./pool.js";
export { defaultWorkerCommand, type Platform, type PlatformOptions, startPlatform } from "./server.js";
