// `flash undeploy`: deletes endpoints and Pods by name or id, or all this app deployed, after asking.
import { createInterface } from "node:readline";
import { redact } from "../log/index.js";
import { toggle } from "../options/index.js";
import { deleteResources, resourcesToDelete } from "../toolkit/deploy/pod-lifecycle.js";
import { toolkitLogger } from "../toolkit/log.js";
import { connectApi } from "../toolkit/rest/connect.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

export const spec = {
  name: "undeploy",
  args: "NAME...",
  summary: "delete endpoints and Pods (by name or id, or --all this app deployed); asks first unless --yes",
  options: {
    all: toggle(["--all"], "every endpoint and Pod this app deployed (.flash/deployments.json)"),
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

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`;

/** `flash undeploy NAME... | --all [--yes]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const doomed = await resourcesToDelete(api, process.cwd(), positional, options.all);
    const count = doomed.endpoints.length + doomed.pods.length;
    if (count === 0) {
      process.stdout.write("Nothing to delete: the recorded endpoints and Pods no longer exist.\n");
      return 0;
    }
    const list = [
      ...doomed.endpoints.map((e) => `${e.name} (${e.id})`),
      ...doomed.pods.map((p) => `Pod ${p.name} (${p.id})`),
    ].join(", ");
    if (!options.yes) {
      const yes = await confirm(`Delete ${count} endpoint(s) and Pod(s) on ${api.url}: ${list}? [y/N] `);
      if (!yes) {
        return fail(
          process.stdin.isTTY
            ? "Nothing deleted."
            : `Nothing deleted: confirm with --yes to delete ${list} without a prompt.`,
        );
      }
    }
    const kinds = `${plural(doomed.endpoints.length, "endpoint")}, ${plural(doomed.pods.length, "Pod")}`;
    process.stdout.write(`Deleting ${kinds} on ${api.url}…\n`);
    // One line per endpoint or Pod as its DELETE ends (a few run at once), then the count.
    const results = await deleteResources(api, process.cwd(), doomed, (d) => {
      const what = `${d.kind} ${d.name} (${d.id})`;
      if (d.error) process.stderr.write(`  ✗ ${what}: ${redact(d.error.message)}\n`);
      else process.stdout.write(`  deleted ${what}\n`);
    });
    const failed = results.filter((d) => d.error).length;
    const tally = `${count - failed} of ${count} (${kinds})`;
    if (failed > 0)
      return fail(`deleted ${tally}; ${failed} failed, named above: run flash undeploy again for them`);
    process.stdout.write(`✓ deleted ${tally}\n`);
    return 0;
  } catch (err) {
    if (isDeployError(err)) return fail(err.message);
    throw err;
  }
}
