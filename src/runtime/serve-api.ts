// `--rp_serve_api`: the local platform in this process, with this process's handler as its only worker.

import { isOpenAICompatible } from "../app/openai.js";
import { isLoopback } from "../http/loopback.js";
import type { HandlerDefinition } from "../job/definition.js";
import type { Logger } from "../log/index.js";
import { curlCommand, startPlatform } from "../platform/index.js";
import { readProtocolConfig, type WorkerConfig } from "./config/options.js";
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
  config: WorkerConfig,
  log: Logger,
  runWorker: (
    app: HandlerDefinition,
    config: WorkerConfig,
    log: Logger,
    inProcess?: PlatformClient,
  ) => Promise<number>,
): Promise<number> {
  const platform = await startPlatform({
    // uvicorn's "localhost" is IPv4 loopback.
    host: config.apiHost === "localhost" ? "127.0.0.1" : config.apiHost,
    port: config.apiPort,
    apiKey: config.serveApiKey,
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
  // This process's settings, with the protocol addresses the platform gives each of its workers; as for
  // flash dev's workers, the cloud hosts' memory, disk and network thresholds do not apply on a laptop.
  const worker: WorkerConfig = {
    ...config,
    platform: readProtocolConfig(platform.workerEnv(ENDPOINT_ID, WORKER_ID)),
    fitness: { ...config.fitness, skipSystem: true },
  };
  process.stdout.write(
    [
      `Local API server for this handler at ${platform.url}/v2/${ENDPOINT_ID}`,
      `API key: ${platform.apiKey}${config.serveApiKey ? "" : " (generated; pass --api-key to choose one)"}`,
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
