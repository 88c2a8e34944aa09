// `flash serve`: the local platform alone, for workers started elsewhere that point their env at it.

import { ConfigError } from "../options/index.js";
import { curlCommand, startPlatform } from "../platform/index.js";
import {
  closeOnSignal,
  consoleUrl,
  LOCAL_PLATFORM_OPTIONS,
  localPlatform,
} from "../toolkit/dev/local-platform.js";
import { type CommandSpec, parseCommandArgs } from "./options.js";

export const spec = {
  name: "serve",
  args: "[endpoint_id...]",
  summary: "the local platform alone: workers started elsewhere point their env at it",
  options: LOCAL_PLATFORM_OPTIONS,
} satisfies CommandSpec;

const ENDPOINT_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** `flash serve [endpoint_id ...]`: the platform with these endpoints (default "local") and no workers of its own. */
export async function run(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseCommandArgs<typeof spec.options>>;
  try {
    parsed = parseCommandArgs(spec, args);
    const bad = parsed.positional.find((id) => !ENDPOINT_ID.test(id));
    if (bad) throw new ConfigError(`Invalid endpoint id "${bad}": letters, digits, "-" and "_", at most 64`);
  } catch (err) {
    process.stderr.write(`flash serve: ${(err as Error).message}\n`);
    return 1;
  }
  const ids = parsed.positional.length > 0 ? parsed.positional : ["local"];
  const { settings, log, keyGenerated } = await localPlatform(parsed.options);
  const platform = await startPlatform({
    ...settings,
    endpoints: ids.map((id) => ({ id, name: id })),
  });
  const lines = [`flash serve: the local platform is at ${platform.url}`];
  lines.push(
    `API key: ${platform.apiKey}${keyGenerated ? " (generated; pass --api-key to choose one)" : ""}`,
  );
  lines.push(`Console: ${consoleUrl(platform)}`);
  for (const id of ids) {
    lines.push("", `Endpoint "${id}": start a worker with this environment (any RUNPOD_POD_ID names it):`);
    for (const [name, value] of Object.entries(platform.workerEnv(id, "worker-1"))) {
      lines.push(`  export ${name}='${value}'`);
    }
    lines.push(`Ready. Try: ${curlCommand(platform, id, '{"input":{}}')}`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
  await closeOnSignal(platform, log.child({ subject: "serve" }));
  return 0;
}
