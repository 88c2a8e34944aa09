// `flash login`: an API key asked for or given, checked against the REST API, saved in ~/.runpod/config.toml.
import { createInterface } from "node:readline";
import { isFlashError } from "../flash-error.js";
import { addSecret } from "../log/index.js";
import { ConfigError, toggle, apiKey as validApiKey } from "../options/index.js";
import { saveApiKey } from "../project/credentials.js";
import { toolkitLogger } from "../toolkit/log.js";
import { DEFAULT_API_URL, isApiError, RestClient } from "../toolkit/rest/client.js";
import { apiErrorSentence } from "../toolkit/rest/errors.js";
import { API_OPTIONS, type CommandSpec, fail, parseCommandArgs } from "./options.js";

export const spec = {
  name: "login",
  args: "",
  summary:
    "check an API key against the API and save it in ~/.runpod/config.toml (prompted for, or --api-key)",
  options: {
    apiKey: { ...API_OPTIONS.apiKey, help: "the key to save (asked for when not given)" },
    apiUrl: {
      ...API_OPTIONS.apiUrl,
      help: "the REST API that checks it (env RUNPOD_API_URL); given as a flag, saved as the default API too",
    },
    noVerify: toggle(["--no-verify"], "save the key without checking it"),
  },
} satisfies CommandSpec;

const consoleUrl = (env: Record<string, string | undefined>) =>
  (env.RUNPOD_CONSOLE_URL || env.CONSOLE_BASE_URL || "https://console.runpod.io").replace(/\/+$/, "");

/** One line from stdin; undefined when it closes first. */
function readLine(prompt: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({
      input: process.stdin,
      output: process.stderr,
      terminal: process.stdin.isTTY,
    });
    let answered = false;
    rl.question(prompt, (answer) => {
      answered = true;
      rl.close();
      resolve(answer);
    });
    rl.once("close", () => {
      if (!answered) resolve(undefined);
    });
  });
}

/** `flash login [--api-key KEY]`: asks for the key (or takes it), checks its shape, saves it for the user only. */
export async function run(args: string[]): Promise<number> {
  const env = process.env;
  let key: string | undefined;
  let apiUrl = DEFAULT_API_URL;
  let verify = true;
  // Only a URL typed here is saved: RUNPOD_API_URL is already read by every command.
  let saveUrl: string | undefined;
  try {
    const { options, sources, positional } = parseCommandArgs(spec, args, env);
    apiUrl = options.apiUrl ?? DEFAULT_API_URL;
    if (options.apiUrl && sources.apiUrl === "flag") saveUrl = options.apiUrl.replace(/\/v2$/, "");
    verify = !options.noVerify;
    if (positional.length > 0) throw new ConfigError(`Unexpected argument ${positional[0]}`);
    key = options.apiKey;
    if (key === undefined) {
      process.stderr.write(
        `Create an API key in the console: ${consoleUrl(env)}/user/settings (Settings > API Keys, permission All).\n`,
      );
      const pasted = (await readLine("Paste the API key: "))?.trim();
      if (!pasted) return fail("No API key given; nothing saved.");
      key = validApiKey(pasted, "the pasted key");
      addSecret(key);
    }
  } catch (err) {
    return fail((err as Error).message);
  }
  if (verify) {
    // The cheapest authenticated read: the endpoint list. A refused key is not saved.
    const api = new RestClient({ url: apiUrl, apiKey: key!, log: toolkitLogger().child({ subject: "api" }) });
    try {
      const endpoints = await api.listEndpoints();
      process.stdout.write(
        `✓ The API at ${api.url} accepted the key (${endpoints.length} endpoint(s) on the account).\n`,
      );
    } catch (err) {
      if (isApiError(err)) return fail(`${apiErrorSentence(err, "the key", api.url)}. Nothing saved.`);
      if (isFlashError(err, "API_UNREACHABLE")) {
        return fail(`${err.message}. Nothing saved; to save the key without checking it, pass --no-verify.`);
      }
      throw err;
    }
  }
  const path = saveApiKey(key!, undefined, saveUrl);
  process.stdout.write(
    `Logged in${verify ? "" : " (key not checked: --no-verify)"}. Credentials${saveUrl ? ` and the API ${saveUrl}` : ""} saved to ${path}\n`,
  );
  for (const name of ["RUNPOD_API_KEY", "SERVICE_API_KEY"]) {
    if (process.env[name]?.trim()) {
      process.stderr.write(`! ${name} is set in this environment and is used before the saved key.\n`);
    }
  }
  return 0;
}
