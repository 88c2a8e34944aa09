// `flash start`: the images' entry; the environment picks queue worker, HTTP server or one-shot test.
import { findHandlerFile, loadApp } from "../app/load.js";
import { WORKER_OPTIONS } from "../runtime/config/options.js";
import { startApp } from "../runtime/start.js";
import type { CommandSpec } from "./options.js";

export const spec = {
  name: "start",
  args: "[file]",
  summary:
    "the production entry: the mode comes from the environment (queue worker, HTTP server or one-shot test)",
  // The worker reads these (runtime/config/options.ts); listed here for help, other flags go to the handler.
  options: {
    testInput: { ...WORKER_OPTIONS.testInput, help: "run this one job and exit (alias --test_input)" },
    serveApi: WORKER_OPTIONS.serveApi,
    apiPort: WORKER_OPTIONS.apiPort,
    serveApiLoopback: WORKER_OPTIONS.serveApiLoopback,
    logLevel: WORKER_OPTIONS.logLevel,
  },
  lenient: true,
} satisfies CommandSpec;

/** `flash start [file]`: what the images run; queue worker when RUNPOD_WEBHOOK_GET_JOB is set. */
export async function run(args: string[]): Promise<number> {
  const [first, ...rest] = args;
  const given = first && !first.startsWith("-") ? first : undefined;
  const file = findHandlerFile(given);
  const app = await loadApp(file);
  return startApp(app, { argv: given ? rest : args, file });
}
