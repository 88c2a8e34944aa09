// `flash pods`: the account's Pods with their status, compute, cost and the addresses of their ports.

import { redact } from "../log/index.js";
import { ConfigError, toggle } from "../options/index.js";
import { withApi } from "../toolkit/deploy/lifecycle.js";
import { podAddresses } from "../toolkit/deploy/pod.js";
import { formatPods } from "../toolkit/deploy/pod-lifecycle.js";
import { toolkitLogger } from "../toolkit/log.js";
import { connectApi } from "../toolkit/rest/connect.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec = {
  name: "pods",
  args: "",
  summary: "list the account's Pods: status, GPU or CPU, cost, and each port's proxy URL or ip:port",
  options: {
    ...API_OPTIONS,
    json: toggle(["--json"], "the Pods as the API gives them, each with its addresses"),
  },
} satisfies CommandSpec;

/** `flash pods [--api-url URL] [--json]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    if (positional.length > 0) throw new ConfigError(`Unexpected argument ${positional[0]}`);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const pods = await withApi(api, "the Pod list", () => api.listPods());
    // A queue app's Pod holds the API key in its env: never printed.
    const shown = options.json
      ? redact(
          JSON.stringify(
            pods.map((pod) => ({ pod, addresses: podAddresses(api.url, pod) })),
            null,
            2,
          ),
        )
      : formatPods(api.url, pods);
    process.stdout.write(`${shown}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
