// Which API and which key the lifecycle commands use: --api-url, RUNPOD_API_URL, else RunPod's; --api-key, else
// the toolkit's discovery chain (RUNPOD_API_KEY, .env, ~/.runpod/config.toml).
import { resolveApiKey } from "../client/credentials.js";
import type { Logger } from "../log/index.js";
import { DEFAULT_API_URL, RestClient } from "./rest-client.js";

export interface ConnectOptions {
  apiUrl?: string;
  apiKey?: string;
  log: Logger;
  cwd?: string;
  env?: Record<string, string | undefined>;
}

export function connectApi(options: ConnectOptions): RestClient {
  const apiKey =
    options.apiKey ??
    resolveApiKey({
      log: options.log,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      ...(options.env ? { env: options.env } : {}),
    }).key;
  return new RestClient({
    url: options.apiUrl ?? DEFAULT_API_URL,
    apiKey,
    log: options.log.child({ subject: "api" }),
  });
}
