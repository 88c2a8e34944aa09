// `flash logs`: a deployed endpoint's worker logs, all workers or one, or a Pod's logs; read once or followed.

import { nextShutdownSignal } from "../lifecycle.js";
import { ConfigError, nonEmpty, toggle } from "../options/index.js";
import { findEndpoint, workerLogs } from "../toolkit/deploy/lifecycle.js";
import { findPod, podLogs } from "../toolkit/deploy/pod-lifecycle.js";
import { toolkitLogger } from "../toolkit/log.js";
import { connectApi } from "../toolkit/rest/connect.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec = {
  name: "logs",
  args: "ENDPOINT|POD",
  summary:
    "a deployed endpoint's worker logs (every worker, or --worker ID), or a Pod's; --follow keeps reading",
  options: {
    worker: { flags: ["--worker"], parse: nonEmpty, value: "ID", help: "one worker's logs only" },
    pod: toggle(["--pod"], "the Pod of that name, when an endpoint has the same name"),
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
    if (!ref)
      throw new ConfigError("Name the endpoint or Pod: flash logs ENDPOINT|POD [--worker ID] [--follow]");
    if (extra) throw new ConfigError(`Unexpected argument ${extra}`);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const controller = new AbortController();
    const interrupted = nextShutdownSignal();
    void interrupted.signal.then(() => controller.abort());
    const write = (line: string) => process.stdout.write(`${line}\n`);
    // A Pod when asked for, or when the name is a Pod's and no endpoint's.
    const pod = options.worker ? undefined : await findPod(api, ref);
    const isPod =
      pod !== undefined &&
      (options.pod ||
        (await findEndpoint(api, ref).then(
          () => false,
          () => true,
        )));
    if (options.pod && !pod)
      throw new ConfigError(`No Pod named ${ref} on ${api.url} (flash pods lists them)`);
    if (isPod) await podLogs(api, pod, { follow: options.follow, signal: controller.signal, write });
    else
      await workerLogs(api, ref, {
        workerId: options.worker,
        follow: options.follow,
        signal: controller.signal,
        write,
        note: (line) => process.stderr.write(`${line}\n`),
      });
    interrupted.dispose();
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
