// `flash endpoints`: the account's serverless endpoints and their workers, as a table.

import { ConfigError, toggle } from "../options/index.js";
import { formatEndpoints, listEndpointsWithWorkers } from "../toolkit/deploy/lifecycle.js";
import { toolkitLogger } from "../toolkit/log.js";
import { connectApi } from "../toolkit/rest/connect.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec = {
  name: "endpoints",
  args: "",
  summary: "list the account's serverless endpoints with their workers",
  options: {
    ...API_OPTIONS,
    json: toggle(["--json"], "the endpoints and their workers as JSON"),
  },
} satisfies CommandSpec;

/** `flash endpoints [--api-url URL] [--json]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    if (positional.length > 0) throw new ConfigError(`Unexpected argument ${positional[0]}`);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const list = await listEndpointsWithWorkers(api);
    process.stdout.write(`${options.json ? JSON.stringify(list, null, 2) : formatEndpoints(list)}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
