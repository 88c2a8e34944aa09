// What `flash dev` and `flash serve` share: their command line and the console address they print.

import { containerToolOptions } from "../../containers/options.js";
import { nextShutdownSignal } from "../../lifecycle.js";
import { type Logger, openLogger } from "../../log/index.js";
import { type Env, logOutput, type Values } from "../../options/index.js";
import { type Platform, type PlatformOptions, WORKER_STOP_GRACE_MS } from "../../platform/index.js";
import { PLATFORM_OPTIONS } from "../../platform/options.js";

/** dev's and serve's table: the local platform's own options. */
export const LOCAL_PLATFORM_OPTIONS = PLATFORM_OPTIONS;

/** The platform's settings from dev's or serve's options, and its logger. */
export async function localPlatform(
  options: Values<typeof PLATFORM_OPTIONS>,
  env: Env = process.env,
): Promise<{ settings: Omit<PlatformOptions, "endpoints">; log: Logger; keyGenerated: boolean }> {
  const log = await openLogger(logOutput(options, env));
  const settings = {
    // uvicorn's "localhost" is IPv4 loopback; binding it here avoids a second, IPv6 listener.
    host: options.host === "localhost" ? "127.0.0.1" : options.host,
    port: options.port,
    // Left to the platform when not chosen: it generates one, and refuses a non-loopback address without one.
    apiKey: options.apiKey,
    logger: log,
    // Endpoints deployed to it through REST v2 (flash deploy --api-url) run their images with this tool.
    containers: containerToolOptions(options),
    // RUNPOD_INIT_TIMEOUT, as its workers read it from the environment they inherit.
    workerInitTimeoutMs: options.initTimeout,
    // FLASH_PLATFORM_MEMORY_MB; left to the platform (a quarter of the heap limit) when not set.
    memoryBytes: options.memoryMb === undefined ? undefined : options.memoryMb * 1024 * 1024,
  };
  return { settings, log, keyGenerated: options.apiKey === undefined };
}

/** The console's address with the key in the fragment: the page logs in from it and browsers never send it. */
export function consoleUrl(platform: Platform): string {
  return `${platform.url}/#key=${encodeURIComponent(platform.apiKey)}`;
}

/**
 * Waits for Ctrl-C (or SIGTERM), then closes the platform: jobs in flight get the grace period, and a
 * second signal kills the workers at once.
 */
export async function closeOnSignal(platform: Platform, log: Logger, before?: () => void): Promise<void> {
  const signal = await nextShutdownSignal().signal;
  log.info(
    `${signal} received; stopping workers and the platform (jobs in flight get up to ${WORKER_STOP_GRACE_MS / 1000} s; press Ctrl-C again to stop them now)`,
  );
  const again = nextShutdownSignal();
  void again.signal.then((second) => {
    log.warn(`${second} received again; killing the workers now`);
    platform.killWorkers();
  });
  before?.();
  await platform.close();
  again.dispose();
}
