// What `flash dev` and `flash serve` share: their command line and the console address they print.

import type { ContainerToolOptions } from "../containers/tool.js";
import { nextShutdownSignal } from "../lifecycle.js";
import type { Logger } from "../log/index.js";
import type { Config } from "../options/index.js";
import { newApiKey, type Platform, WORKER_STOP_GRACE_MS } from "../platform/index.js";
import { type CommandOption, type CommandSpec, LOG_LEVEL_OPTION, parseCommandArgs } from "./options.js";

/** What dev and serve read from the command line, through the one config parser. */
export interface LocalPlatformArgs {
  config: Config;
  host: string;
  port: number;
  apiKey: string;
  keyGenerated: boolean;
  positional: string[];
}

/** dev's and serve's table: `--host`/`--port` feed the local API server's (runpod-python's --rp_api_host/--rp_api_port). */
export const LOCAL_PLATFORM_OPTIONS: readonly CommandOption[] = [
  { flag: "--host", value: "HOST", help: "address to listen on (default 127.0.0.1)", config: "--api-host" },
  { flag: "--port", value: "PORT", help: "port to listen on (default 8000)", config: "--api-port" },
  {
    flag: "--api-key",
    value: "KEY",
    help: "the platform's API key (env FLASH_API_KEY; generated when not given)",
  },
  LOG_LEVEL_OPTION,
];

/** Parses dev/serve's command line against the command's table. */
export function parseLocalArgs(
  spec: CommandSpec,
  args: readonly string[],
  env = process.env,
): LocalPlatformArgs {
  const { config, positional } = parseCommandArgs(spec, args, env);
  const generated = config.localApiKey === undefined;
  return {
    config,
    // uvicorn's "localhost" is IPv4 loopback; binding it here avoids a second, IPv6 listener.
    host: config.apiHost === "localhost" ? "127.0.0.1" : config.apiHost,
    port: config.apiPort,
    apiKey: config.localApiKey ?? newApiKey(),
    keyGenerated: generated,
    positional,
  };
}

/** The console's address with the key in the fragment: the page logs in from it and browsers never send it. */
export function consoleUrl(platform: Platform): string {
  return `${platform.url}/#key=${encodeURIComponent(platform.apiKey)}`;
}

/** The container tool settings of the platform's deployed endpoints (FLASH_CONTAINER_TOOL, FLASH_CONTAINER_STORAGE). */
export function containerOptions(config: Config): ContainerToolOptions {
  return {
    ...(config.containerTool ? { tool: config.containerTool } : {}),
    ...(config.containerStorage ? { storage: config.containerStorage } : {}),
  };
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
