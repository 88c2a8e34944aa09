// `--rp_serve_api`: the local platform in this process, with this process's handler as its only worker.

import { isOpenAICompatible } from "../app/openai.js";
import { isLoopback } from "../http/loopback.js";
import type { HandlerDefinition } from "../job/definition.js";
import type { Logger } from "../log/index.js";
import { type Config, parseConfig } from "../options/index.js";
import { curlCommand, startPlatform } from "../platform/index.js";
import type { PlatformClient } from "./queue/client.js";
import { InProcessPlatformClient } from "./queue/in-process-client.js";

const ENDPOINT_ID = "local";
const WORKER_ID = "local-worker";

/**
 * `--rp_serve_api` (runpod-python's habit): the local platform on --rp_api_host:--rp_api_port with one
 * endpoint, and this process's handler as its worker. The worker is the production queue worker (its
 * concurrency, the job engine, result shaping, progress, the stop channel); it calls the platform's
 * worker API in-process instead of over loopback HTTP, unless --serve-api-loopback asks for the wire.
 * Returns when SIGINT/SIGTERM has drained the worker.
 */
export async function serveApi(
  app: HandlerDefinition,
  config: Config,
  log: Logger,
  runWorker: (
    app: HandlerDefinition,
    config: Config,
    log: Logger,
    inProcess?: PlatformClient,
  ) => Promise<number>,
): Promise<number> {
  const platform = await startPlatform({
    // uvicorn's "localhost" is IPv4 loopback.
    host: config.apiHost === "localhost" ? "127.0.0.1" : config.apiHost,
    port: config.apiPort,
    ...(config.localApiKey ? { apiKey: config.localApiKey } : {}),
    logger: log,
    endpoints: [
      {
        id: ENDPOINT_ID,
        name: config.file ?? "this process",
        // The console offers its chat form, as `flash dev` does for the same handler.
        ...(isOpenAICompatible(app.fn) ? { openaiCompatible: true } : {}),
      },
    ],
    rootEndpoint: ENDPOINT_ID,
  });
  const worker = parseConfig([], platform.workerEnv(ENDPOINT_ID, WORKER_ID)).config;
  worker.logLevel = config.logLevel;
  worker.logJson = config.logJson;
  worker.logFormat = config.logFormat;
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
  const inProcess = config.serveApiLoopback
    ? undefined
    : new InProcessPlatformClient(platform.workerCalls(ENDPOINT_ID, WORKER_ID), worker.platform);
  try {
    return await runWorker(app, worker, log, inProcess);
  } finally {
    await platform.close();
  }
}
