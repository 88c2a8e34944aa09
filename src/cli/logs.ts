import { toolkitLogger } from "../client/log.js";
import { ConfigError } from "../config/index.js";
import { connectApi } from "../deploy/connect.js";
import { LifecycleError, workerLogs } from "../deploy/lifecycle.js";
import { isDeployError } from "./deploy.js";
import { fail, parseToolkitArgs } from "./toolkit-args.js";

export const summary =
  "a deployed endpoint's worker logs (every worker, or --worker ID); --follow keeps reading";

export const options = ["--worker", "--follow", "--api-url", "--api-key"];

/** `flash logs ENDPOINT [--worker ID] [--follow]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const env = { ...process.env, FLASH_API_KEY: undefined };
    const { config, positional } = parseToolkitArgs("logs", args, options, env);
    const [ref, extra] = positional;
    if (!ref) throw new ConfigError("Name the endpoint: flash logs ENDPOINT [--worker ID] [--follow]");
    if (extra) throw new ConfigError(`Unexpected argument ${extra}`);
    const api = connectApi({ apiUrl: config.apiUrl, apiKey: config.localApiKey, log });
    const controller = new AbortController();
    const stop = () => controller.abort();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    await workerLogs(api, ref, {
      ...(config.workerId ? { workerId: config.workerId } : {}),
      follow: config.follow,
      signal: controller.signal,
      write: (line) => process.stdout.write(`${line}\n`),
    });
    return 0;
  } catch (err) {
    if (isDeployError(err) || err instanceof LifecycleError) return fail(err.message);
    throw err;
  }
}
