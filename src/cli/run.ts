// `flash run`: one job through the handler, whatever the environment says (the one-shot test): the result body
// on stdout, the logs on stderr.
import { findHandlerFile, loadApp } from "../app/load.js";
import { startApp } from "../runtime/start.js";
import { type CommandSpec, LOG_LEVEL_OPTION } from "./options.js";

export const spec: CommandSpec = {
  name: "run",
  args: "[file]",
  summary: "run one job through the handler locally and print the result",
  options: [
    {
      flag: "--test-input",
      value: "JSON",
      help: "the job to run (alias --test_input; default test_input.json)",
    },
    {
      flag: "--timeout",
      value: "SECONDS",
      help: "how long the job may run (default: the Endpoint's executionTimeoutMs, else 600)",
    },
    LOG_LEVEL_OPTION,
  ],
  lenient: true,
};

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
