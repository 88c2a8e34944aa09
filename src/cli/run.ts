import { findHandlerFile, loadApp } from "../runtime/load.js";
import { startApp } from "../runtime/start.js";

export const summary = "run one job through the handler locally and print the result";

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
