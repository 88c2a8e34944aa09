// `flash run`: one job through the handler, whatever the environment says (the one-shot test): the result body
// on stdout, the logs on stderr.
import { findHandlerFile, loadApp } from "../app/load.js";
import { WORKER_OPTIONS } from "../runtime/config/options.js";
import { startApp } from "../runtime/start.js";
import type { CommandSpec } from "./options.js";

export const spec = {
  name: "run",
  args: "[file]",
  summary: "run one job through the handler locally and print the result",
  // The worker reads these (runtime/config/options.ts); listed here for help, other flags go to the handler.
  options: {
    testInput: {
      ...WORKER_OPTIONS.testInput,
      help: "the job to run (alias --test_input; default test_input.json)",
    },
    timeout: WORKER_OPTIONS.timeout,
    logLevel: WORKER_OPTIONS.logLevel,
  },
  lenient: true,
} satisfies CommandSpec;

/** `flash run <file> [--test-input JSON]`: the one-shot local test, whatever the environment says. */
export async function run(args: string[]): Promise<number> {
  const [first, ...rest] = args;
  const file = findHandlerFile(first && !first.startsWith("-") ? first : undefined);
  const argv = first && !first.startsWith("-") ? rest : args;
  const app = await loadApp(file);
  const env = { ...process.env };
  delete env.RUNPOD_WEBHOOK_GET_JOB;
  return startApp(app, { argv, env, file, oneShot: true });
}
