// `flash logs`: a deployed endpoint's worker logs, all workers or one, read once or followed.

import { nextShutdownSignal } from "../lifecycle.js";
import { ConfigError, nonEmpty, toggle } from "../options/index.js";
import { connectApi } from "./deploy/connect.js";
import { workerLogs } from "./deploy/lifecycle.js";
import { toolkitLogger } from "./log.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec = {
  name: "logs",
  args: "ENDPOINT",
  summary: "a deployed endpoint's worker logs (every worker, or --worker ID); --follow keeps reading",
  options: {
    worker: { flags: ["--worker"], parse: nonEmpty, value: "ID", help: "one worker's logs only" },
    follow: toggle(["--follow", "-f"], "keep reading until interrupted"),
    ...API_OPTIONS,
  },
} satisfies CommandSpec;

/** `flash logs ENDPOINT [--worker ID] [--follow]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    const [ref, extra] = positional;
    if (!ref) throw new ConfigError("Name the endpoint: flash logs ENDPOINT [--worker ID] [--follow]");
    if (extra) throw new ConfigError(`Unexpected argument ${extra}`);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const controller = new AbortController();
    const interrupted = nextShutdownSignal();
    void interrupted.signal.then(() => controller.abort());
    await workerLogs(api, ref, {
      workerId: options.worker,
      follow: options.follow,
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
