// `flash start`: the images' entry; the environment picks queue worker, HTTP server or one-shot test.
import { findHandlerFile, loadApp } from "../app/load.js";
import { startApp } from "../runtime/start.js";
import { type CommandSpec, LOG_LEVEL_OPTION } from "./options.js";

export const spec: CommandSpec = {
  name: "start",
  args: "[file]",
  summary:
    "the production entry: the mode comes from the environment (queue worker, HTTP server or one-shot test)",
  options: [
    { flag: "--test-input", value: "JSON", help: "run this one job and exit (alias --test_input)" },
    {
      flag: "--serve-api",
      help: "the local platform in this process with this worker (alias --rp_serve_api)",
    },
    { flag: "--api-port", value: "PORT", help: "its port (alias --rp_api_port; default 8000)" },
    {
      flag: "--serve-api-loopback",
      help: "its worker on the worker protocol over loopback instead of in-process calls",
    },
    LOG_LEVEL_OPTION,
  ],
  lenient: true,
};

/** `flash start [file]`: what the images run; queue worker when RUNPOD_WEBHOOK_GET_JOB is set. */
export async function run(args: string[]): Promise<number> {
  const [first, ...rest] = args;
  const given = first && !first.startsWith("-") ? first : undefined;
  const file = findHandlerFile(given);
  const app = await loadApp(file);
  return startApp(app, { argv: given ? rest : args, file });
}
