// `--rp_serve_api`: the local platform in this process, with this process's handler as its only worker.
import { type Config, parseConfig } from "../config/index.js";
import { isLoopback } from "../http/loopback.js";
import type { HandlerDefinition } from "../job/definition.js";
import type { Logger } from "../log/index.js";
import { curlCommand, startPlatform } from "../platform/index.js";

const ENDPOINT_ID = "local";
const WORKER_ID = "local-worker";

/**
 * `--rp_serve_api` (runpod-python's habit): the local platform on --rp_api_host:--rp_api_port with one
 * endpoint, and this process's handler as its worker, connected over loopback through the same
 * worker protocol as in production. Returns when SIGINT/SIGTERM has drained the worker.
 */
export async function serveApi(
  app: HandlerDefinition,
  config: Config,
  log: Logger,
  runWorker: (app: HandlerDefinition, config: Config, log: Logger) => Promise<number>,
): Promise<number> {
  const platform = await startPlatform({
    // uvicorn's "localhost" is IPv4 loopback.
    host: config.apiHost === "localhost" ? "127.0.0.1" : config.apiHost,
    port: config.apiPort,
    ...(config.localApiKey ? { apiKey: config.localApiKey } : {}),
    logger: log,
    endpoints: [{ id: ENDPOINT_ID, name: config.file ?? "this process" }],
    rootEndpoint: ENDPOINT_ID,
  });
  const worker = parseConfig([], platform.workerEnv(ENDPOINT_ID, WORKER_ID)).config;
  worker.logLevel = config.logLevel;
  worker.logJson = config.logJson;
  worker.gracePeriodMs = config.gracePeriodMs;
  process.stdout.write(
    [
      `Local API server for this handler at ${platform.url}/v2/${ENDPOINT_ID}`,
      `API key: ${platform.apiKey}${config.localApiKey ? "" : " (generated; pass --api-key to choose one)"}`,
      `runpod-python's paths answer too: ${platform.url}/run, /runsync, /status/<id>, /stream/<id>${isLoopback(platform.host.replace(/^\[|\]$/g, "")) ? " (no key needed on loopback)" : ""}`,
      `Ready. Try: ${curlCommand(platform, ENDPOINT_ID, '{"input":{}}')}`,
      "",
    ].join("\n"),
  );
  try {
    return await runWorker(app, worker, log);
  } finally {
    await platform.close();
  }
}
