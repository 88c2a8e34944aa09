import { findHandlerFile, loadApp } from "../runtime/load.js";
import { startApp } from "../runtime/start.js";

export const summary = "the production entry: the mode comes from the environment";

/** `flash start [file]`: what the images run; queue worker when RUNPOD_WEBHOOK_GET_JOB is set. */
export async function run(args: string[]): Promise<number> {
  const [first, ...rest] = args;
  const given = first && !first.startsWith("-") ? first : undefined;
  const file = findHandlerFile(given);
  const app = await loadApp(file);
  return startApp(app, { argv: given ? rest : args, file });
}
