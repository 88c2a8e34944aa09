// Each command's typed option table: strict parsing for the toolkit's commands, lenient for the worker's, help
// generated from the tables.
import { isFlashError } from "../flash-error.js";
import { redact } from "../log/index.js";
import {
  apiKey,
  type Env,
  httpUrl,
  LOG_OPTIONS,
  type OptionTable,
  readOptions,
  type Sources,
  shownFlags,
  text,
  type Values,
} from "../options/index.js";

export interface CommandSpec<T extends OptionTable = OptionTable> {
  name: string;
  /** Positional arguments as help shows them: `[files...]`. */
  args: string;
  summary: string;
  /** The flags and variables the command reads; those with help are listed by `--help`. */
  options: T;
  /** Worker commands: flags not in the table go on to the user's handler (runpod-python's parse_known_args). */
  lenient?: boolean;
}

/** What every command module exports. */
export interface Command {
  spec: CommandSpec;
  /** Runs the command with the arguments after its name; resolves to the process exit code. */
  run(args: string[]): Promise<number>;
}

/** Shared entries of the tables. */
export const LOG_LEVEL_OPTION = LOG_OPTIONS.logLevel;

export const NODE_VERSION_OPTION = {
  flags: ["--node-version"],
  env: ["FLASH_NODE_VERSION"],
  parse: text,
  value: "V",
  help: "Node.js major the workers run: 20, 22 or 24 (env FLASH_NODE_VERSION)",
} as const;

/** The REST API options of deploy and the lifecycle commands. */
export const API_OPTIONS = {
  apiUrl: {
    flags: ["--api-url"],
    env: ["RUNPOD_API_URL"],
    parse: httpUrl,
    value: "URL",
    help: "the REST API (env RUNPOD_API_URL; default https://api.runpod.io)",
  },
  apiKey: {
    flags: ["--api-key"],
    parse: apiKey,
    secret: true,
    value: "KEY",
    help: "its key (default: RUNPOD_API_KEY, .env, then flash login's)",
  },
} as const satisfies OptionTable;

/** A command's arguments: its flags checked against its table (strict unless `lenient`), the rest positional. */
export function parseCommandArgs<T extends OptionTable>(
  spec: CommandSpec<T>,
  args: readonly string[],
  env: Env = process.env,
): { options: Values<T>; sources: Sources<T>; positional: string[] } {
  const read = readOptions(spec.options, args, env, spec.lenient ? {} : { command: spec.name });
  return { options: read.values, sources: read.sources, positional: read.rest };
}

/** `flash <name> --help`: usage line, summary and the option table. */
export function commandHelp(spec: CommandSpec): string {
  const lines = [`usage: flash ${spec.name}${spec.args ? ` ${spec.args}` : ""} [options]`, "", spec.summary];
  const listed = Object.values(spec.options).filter((o) => o.help && o.flags?.length);
  if (listed.length > 0) {
    const shown = listed.map((o) => {
      const value = o.value ? (o.optionalValue ? `[=${o.value}]` : ` ${o.value}`) : "";
      return `${shownFlags(o).join(", ")}${value}${o.repeat ? "..." : ""}`;
    });
    const width = Math.max(...shown.map((s) => s.length)) + 2;
    lines.push("", "options:");
    listed.forEach((o, i) => {
      lines.push(`  ${shown[i]!.padEnd(width)}${o.help}`);
    });
  }
  if (spec.lenient) lines.push("", "Other flags are left for the handler.");
  return lines.join("\n");
}

/** `flash --help`: every command with its summary. */
export function commandsHelp(specs: readonly CommandSpec[]): string {
  const shown = specs.map((s) => `${s.name}${s.args ? ` ${s.args}` : ""}`);
  const width = Math.max(...shown.map((s) => s.length)) + 2;
  return [
    "usage: flash <command> [options]",
    "",
    "commands:",
    ...specs.map((s, i) => `  ${shown[i]!.padEnd(width)}${s.summary}`),
    "",
    "flash <command> --help shows a command's options; flash --version prints the version.",
    "The API is https://api.runpod.io unless --api-url or RUNPOD_API_URL names another (flash serve's, say).",
  ].join("\n");
}

/** The toolkit's error line: `✗ <message>` on stderr (docs/toolkit.md, "Errors"). */
export function fail(message: string): number {
  process.stderr.write(`✗ ${redact(message)}\n`);
  return 1;
}

/** Errors the user fixes in their project or command line: printed as one `✗` message, no stack. */
export function isUserError(err: unknown): err is Error {
  return isFlashError(err, "BUILD_FAILED", "CONFIG_INVALID", "LOAD_FAILED", "ENDPOINT_CONFIG_INVALID");
}

/** Errors of deploy and the lifecycle commands whose message is the whole story: one `✗` line. */
export function isDeployError(err: unknown): err is Error {
  return (
    isUserError(err) ||
    isFlashError(
      err,
      "DEPLOY_FAILED",
      "ENDPOINT_MAPPING_INVALID",
      "IMAGE_FAILED",
      "CONTAINER_TOOL_MISSING",
      "CONTAINER_TOOL_FAILED",
      "API_UNREACHABLE",
      "API_KEY_MISSING",
      "CREDENTIALS_FILE_INVALID",
      "LIFECYCLE_FAILED",
    )
  );
}
