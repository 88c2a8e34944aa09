// `flash endpoints`: the account's serverless endpoints and their workers, as a table.

import { ConfigError } from "../options/index.js";
import { connectApi } from "./deploy/connect.js";
import { formatEndpoints, listEndpointsWithWorkers } from "./deploy/lifecycle.js";
import { toolkitLogger } from "./log.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec: CommandSpec = {
  name: "endpoints",
  args: "",
  summary: "list the account's serverless endpoints with their workers",
  options: API_OPTIONS,
};

/** `flash endpoints [--api-url URL]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const env = { ...process.env, FLASH_API_KEY: undefined };
    const { config, positional } = parseCommandArgs(spec, args, env);
    if (positional.length > 0) throw new ConfigError(`Unexpected argument ${positional[0]}`);
    const api = connectApi({ apiUrl: config.apiUrl, apiKey: config.localApiKey, log });
    process.stdout.write(`${formatEndpoints(await listEndpointsWithWorkers(api))}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
