// What `flash dev` and `flash serve` share: their command line and the console address they print.
import { type Config, ConfigError, parseConfig } from "../config/index.js";
import { newApiKey, type Platform } from "../platform/index.js";

/** What dev and serve read from the command line, through the one config parser. */
export interface LocalPlatformArgs {
  config: Config;
  host: string;
  port: number;
  apiKey: string;
  keyGenerated: boolean;
  positional: string[];
}

/**
 * Parses dev/serve flags: `--host`/`--port` are the local API server's (runpod-python's
 * --rp_api_host/--rp_api_port), the rest goes through the shared options.
 */
export function parseLocalArgs(args: readonly string[], env = process.env): LocalPlatformArgs {
  const mapped = args.map((arg) =>
    arg.replace(/^--host(?==|$)/, "--api-host").replace(/^--port(?==|$)/, "--api-port"),
  );
  const { config, rest } = parseConfig(mapped, env);
  const unknown = rest.find((arg) => arg.startsWith("-"));
  if (unknown) throw new ConfigError(`Unknown option ${unknown}`);
  const generated = config.localApiKey === undefined;
  return {
    config,
    // uvicorn's "localhost" is IPv4 loopback; binding it here avoids a second, IPv6 listener.
    host: config.apiHost === "localhost" ? "127.0.0.1" : config.apiHost,
    port: config.apiPort,
    apiKey: config.localApiKey ?? newApiKey(),
    keyGenerated: generated,
    positional: rest,
  };
}

/** The console's address with the key in the fragment: the page logs in from it and browsers never send it. */
export function consoleUrl(platform: Platform): string {
  return `${platform.url}/#key=${encodeURIComponent(platform.apiKey)}`;
}
