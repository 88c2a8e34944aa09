import { toolkitLogger } from "../client/log.js";
import { ConfigError } from "../config/index.js";
import { connectApi } from "../deploy/connect.js";
import { formatEndpoints, LifecycleError, listEndpointsWithWorkers } from "../deploy/lifecycle.js";
import { isDeployError } from "./deploy.js";
import { fail, parseToolkitArgs } from "./toolkit-args.js";

export const summary = "list the account's serverless endpoints with their workers";

export const options = ["--api-url", "--api-key"];

/** `flash endpoints [--api-url URL]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const env = { ...process.env, FLASH_API_KEY: undefined };
    const { config, positional } = parseToolkitArgs("endpoints", args, options, env);
    if (positional.length > 0) throw new ConfigError(`Unexpected argument ${positional[0]}`);
    const api = connectApi({ apiUrl: config.apiUrl, apiKey: config.localApiKey, log });
    process.stdout.write(`${formatEndpoints(await listEndpointsWithWorkers(api))}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err) || err instanceof LifecycleError) return fail(err.message);
    throw err;
  }
}
