// Each command's option table: strict parsing for the toolkit's commands, lenient for the worker's, help from the tables.
import { parseArgs } from "node:util";
import { isFlashError } from "../errors.js";
import { redact } from "../log/index.js";
import { type Config, ConfigError, parseConfig } from "../options/index.js";

export interface CommandOption {
  /** As typed: `--api-key`. */
  flag: string;
  /** Placeholder shown in help; absent for a flag that takes no value. */
  value?: string;
  help: string;
  /** The config parser's flag this one feeds, where it differs (dev's --port is the API server's --api-port). */
  config?: string;
  /** One-letter alias: `y` for `-y`. */
  short?: string;
  /** A value that may be left out: `--tls-verify` alone means `--tls-verify=true`. */
  optionalValue?: boolean;
}

export interface CommandSpec {
  name: string;
  /** Positional arguments as help shows them: `[files...]`. */
  args: string;
  summary: string;
  options: readonly CommandOption[];
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
export const LOG_LEVEL_OPTION: CommandOption = {
  flag: "--log-level",
  value: "LEVEL",
  help: "DEBUG, INFO, WARNING or ERROR (env LOG_LEVEL)",
};

export const NODE_VERSION_OPTION: CommandOption = {
  flag: "--node-version",
  value: "V",
  help: "Node.js major the workers run: 20, 22 or 24 (env FLASH_NODE_VERSION)",
};

const nameOf = (option: CommandOption) => option.flag.replace(/^--/, "");

/** node:util's parse errors, in the words of the one config parser. */
function explain(err: unknown, spec: CommandSpec): string {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  const quoted = /'(-[^' ]*)/.exec(message)?.[1] ?? "";
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const takes = spec.options.map((o) => (o.short ? `${o.flag}/-${o.short}` : o.flag));
    return `Unknown option ${quoted} (flash ${spec.name} ${takes.length > 0 ? `takes ${takes.join(", ")}` : "takes no options"})`;
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && /argument missing|ambiguous/.test(message)) {
    return `Flag ${quoted} needs a value`;
  }
  return message;
}

/**
 * A command's arguments: its flags checked against its table (strict unless `lenient`), their values
 * read and validated by the one config parser, the rest positional.
 */
export function parseCommandArgs(
  spec: CommandSpec,
  args: readonly string[],
  env: Record<string, string | undefined> = process.env,
): { config: Config; positional: string[] } {
  if (spec.lenient) {
    const { config, rest } = parseConfig(args, env);
    return { config, positional: rest };
  }
  const byName = new Map(spec.options.map((option) => [nameOf(option), option]));
  const optional = new Set(spec.options.filter((o) => o.optionalValue).map((o) => o.flag));
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: args.map((arg) => (optional.has(arg) ? `${arg}=true` : arg)),
      options: Object.fromEntries(
        spec.options.map((o) => {
          const type = o.value === undefined ? "boolean" : "string";
          return [nameOf(o), o.short ? { type, short: o.short } : { type }] as const;
        }),
      ),
      strict: true,
      allowPositionals: true,
      tokens: true,
    });
  } catch (err) {
    throw new ConfigError(explain(err, spec));
  }
  const forConfig: string[] = [];
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== "option") continue;
    const option = byName.get(token.name)!;
    const flag = option.config ?? option.flag;
    forConfig.push(option.value === undefined ? flag : `${flag}=${token.value ?? ""}`);
  }
  const { config } = parseConfig(forConfig, env);
  return { config, positional: parsed.positionals };
}

/** `flash <name> --help`: usage line, summary and the option table. */
export function commandHelp(spec: CommandSpec): string {
  const lines = [`usage: flash ${spec.name}${spec.args ? ` ${spec.args}` : ""} [options]`, "", spec.summary];
  if (spec.options.length > 0) {
    const shown = spec.options.map(
      (o) =>
        `${o.short ? `-${o.short}, ` : ""}${o.flag}${o.value ? `${o.optionalValue ? "[=" : " "}${o.value}${o.optionalValue ? "]" : ""}` : ""}`,
    );
    const width = Math.max(...shown.map((s) => s.length)) + 2;
    lines.push("", "options:");
    spec.options.forEach((o, i) => {
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

/** The REST API options of deploy and the lifecycle commands. */
export const API_OPTIONS: readonly CommandOption[] = [
  {
    flag: "--api-url",
    value: "URL",
    help: "the REST API (env RUNPOD_API_URL; default https://api.runpod.io)",
  },
  { flag: "--api-key", value: "KEY", help: "its key (default: RUNPOD_API_KEY, .env, then flash login's)" },
];
