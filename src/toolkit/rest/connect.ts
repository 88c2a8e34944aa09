// Which API and which key the lifecycle commands use: --api-url or RUNPOD_API_URL, else the API this project
// deployed to (.flash/deployments.json), else the one `flash login --api-url` saved, else RunPod's; --api-key,
// else the toolkit's discovery chain (RUNPOD_API_KEY, .env, ~/.runpod/config.toml).
import { homedir } from "node:os";
import { addSecret, type Logger } from "../../log/index.js";
import { credentialsPath, readSavedApiUrl, resolveApiKey } from "../../project/credentials.js";
import { readDeployments } from "../../project/deployments.js";
import { DEFAULT_API_URL, RestClient } from "./client.js";

export interface ConnectOptions {
  apiUrl?: string;
  apiKey?: string;
  log: Logger;
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Home directory of the credentials file. */
  home?: string;
}

/** The API URL and where it came from: flag or env > recorded deployment > saved login > default. */
export function resolveApiUrl(options: Omit<ConnectOptions, "log" | "apiKey">): {
  url: string;
  from: string;
} {
  if (options.apiUrl) return { url: options.apiUrl, from: "--api-url or RUNPOD_API_URL" };
  const recorded = readDeployments(options.cwd ?? process.cwd())?.platform;
  if (recorded) return { url: recorded, from: ".flash/deployments.json" };
  const credentials = credentialsPath(options.home ?? homedir());
  const saved = readSavedApiUrl(credentials);
  if (saved) return { url: saved, from: credentials };
  return { url: DEFAULT_API_URL, from: "the default" };
}

export function connectApi(options: ConnectOptions): RestClient {
  const apiKey =
    options.apiKey ??
    resolveApiKey({
      log: options.log,
      cwd: options.cwd,
      env: options.env,
    }).key;
  addSecret(apiKey);
  const { url, from } = resolveApiUrl(options);
  if (!options.apiUrl && url !== DEFAULT_API_URL) options.log.info(`Using the API at ${url} (from ${from})`);
  return new RestClient({ url, apiKey, log: options.log.child({ subject: "api" }) });
}
