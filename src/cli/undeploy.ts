// `flash undeploy`: deletes endpoints by name or id, or all this app deployed, after asking.
import { createInterface } from "node:readline";
import { toggle } from "../options/index.js";
import { connectApi } from "./deploy/connect.js";
import { deleteEndpoints, endpointsToDelete } from "./deploy/lifecycle.js";
import { toolkitLogger } from "./log.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec = {
  name: "undeploy",
  args: "NAME...",
  summary: "delete endpoints (by name or id, or --all this app deployed); asks first unless --yes",
  options: {
    all: toggle(["--all"], "every endpoint this app deployed (.flash/deployments.json)"),
    yes: toggle(["--yes", "-y"], "do not ask first"),
    ...API_OPTIONS,
  },
} satisfies CommandSpec;

/** y/yes from stdin; anything else, or no terminal to ask on, is no. */
function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return Promise.resolve(false);
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    rl.question(question, (answer) => {
      rl.close();
      resolve(/^y(es)?$/i.test(answer.trim()));
    });
  });
}

/** `flash undeploy NAME... | --all [--yes]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const doomed = await endpointsToDelete(api, process.cwd(), positional, options.all);
    if (doomed.length === 0) {
      process.stdout.write("Nothing to delete: the recorded endpoints no longer exist.\n");
      return 0;
    }
    const list = doomed.map((e) => `${e.name} (${e.id})`).join(", ");
    if (!options.yes) {
      const yes = await confirm(`Delete ${doomed.length} endpoint(s) on ${api.url}: ${list}? [y/N] `);
      if (!yes) {
        return fail(
          process.stdin.isTTY
            ? "Nothing deleted."
            : `Nothing deleted: confirm with --yes to delete ${list} without a prompt.`,
        );
      }
    }
    await deleteEndpoints(api, process.cwd(), doomed);
    process.stdout.write(`✓ deleted ${list}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
