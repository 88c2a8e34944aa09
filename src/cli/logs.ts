// `flash logs`: a deployed endpoint's worker logs, all workers or one, read once or followed.

import { nextShutdownSignal } from "../lifecycle.js";
import { ConfigError } from "../options/index.js";
import { connectApi } from "./deploy/connect.js";
import { workerLogs } from "./deploy/lifecycle.js";
import { toolkitLogger } from "./log.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec: CommandSpec = {
  name: "logs",
  args: "ENDPOINT",
  summary: "a deployed endpoint's worker logs (every worker, or --worker ID); --follow keeps reading",
  options: [
    { flag: "--worker", value: "ID", help: "one worker's logs only" },
    { flag: "--follow", short: "f", help: "keep reading until interrupted" },
    ...API_OPTIONS,
  ],
};

/** `flash logs ENDPOINT [--worker ID] [--follow]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const env = { ...process.env, FLASH_API_KEY: undefined };
    const { config, positional } = parseCommandArgs(spec, args, env);
    const [ref, extra] = positional;
    if (!ref) throw new ConfigError("Name the endpoint: flash logs ENDPOINT [--worker ID] [--follow]");
    if (extra) throw new ConfigError(`Unexpected argument ${extra}`);
    const api = connectApi({ apiUrl: config.apiUrl, apiKey: config.localApiKey, log });
    const controller = new AbortController();
    const interrupted = nextShutdownSignal();
    void interrupted.signal.then(() => controller.abort());
    await workerLogs(api, ref, {
      ...(config.workerId ? { workerId: config.workerId } : {}),
      follow: config.follow,
      signal: controller.signal,
      write: (line) => process.stdout.write(`${line}\n`),
      note: (line) => process.stderr.write(`${line}\n`),
    });
    interrupted.dispose();
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
