// The options parser every program uses: each program declares the flags and variables it reads in a table, and
// one reader applies one rule to all of them (flag > environment variable > default) with one error shape.
import { FlashError } from "../flash-error.js";
import { addSecret, type LogFormat, type LogLevel } from "../log/index.js";

/** The one error type for bad flags and environment variables; the message names the source. */
export class ConfigError extends FlashError {
  readonly code = "CONFIG_INVALID";
  override name = "ConfigError";
}

export type Env = Record<string, string | undefined>;

/** One flag or variable a program reads. */
export interface Option<T = unknown> {
  /** Spellings, the one help shows first (then any `-x` short form); each as `--flag value` or `--flag=value`. */
  readonly flags?: readonly string[];
  /** Environment variables read in order when no flag is given. */
  readonly env?: readonly string[];
  /** A switch: present means true, it takes no value. */
  readonly switch?: boolean;
  /** A value that may be left out: `--tls-verify` alone means `--tls-verify=true`. */
  readonly optionalValue?: boolean;
  /** Given any number of times: the values in order (none: []); read from flags only. */
  readonly repeat?: boolean;
  /** Never logged once read (API keys). */
  readonly secret?: boolean;
  readonly parse: (raw: string, source: string) => T;
  readonly default?: T;
  /** Placeholder help shows for the value: `URL`. */
  readonly value?: string;
  /** Help text; an option without it is not listed by `--help`. */
  readonly help?: string;
}

export type OptionTable = Readonly<Record<string, Option>>;

type ValueOf<O> = O extends { parse: (raw: string, source: string) => infer T }
  ? O extends { repeat: true }
    ? T[]
    : O extends { default: unknown }
      ? T
      : T | undefined
  : never;

/** A table's values: options with a default are always set. */
export type Values<T extends OptionTable> = { -readonly [K in keyof T]: ValueOf<T[K]> };

/** Where each value came from. */
export type Sources<T extends OptionTable> = { [K in keyof T]: "flag" | "env" | "default" };

export interface ReadOptions {
  /** A command's name: its flags are the only ones accepted (strict), and the error names them. */
  command?: string;
}

export interface OptionsRead<T extends OptionTable> {
  values: Values<T>;
  sources: Sources<T>;
  /** Positional arguments, and in lenient mode the flags the table does not know (runpod-python's parse_known_args). */
  rest: string[];
}

/** The flags help shows for an option: its first long spelling, its short ones before it. */
export function shownFlags(option: Option): string[] {
  const flags = option.flags ?? [];
  return [...flags.filter((f) => /^-[^-]$/.test(f)), ...flags.filter((f) => f.startsWith("--")).slice(0, 1)];
}

/** The flags a command takes, as an unknown-option error lists them: `--yes/-y`. */
function flagList(table: OptionTable): string {
  const shown = Object.values(table)
    .filter((o) => o.flags?.length)
    .map((o) => {
      const [long] = shownFlags(o).filter((f) => f.startsWith("--"));
      const short = (o.flags ?? []).find((f) => /^-[^-]$/.test(f));
      return short ? `${long}/${short}` : long;
    });
  return shown.length > 0 ? `takes ${shown.join(", ")}` : "takes no options";
}

/** Reads a table's options from argv and the environment: flag > environment variable > default. */
export function readOptions<T extends OptionTable>(
  table: T,
  argv: readonly string[],
  env: Env = process.env,
  { command }: ReadOptions = {},
): OptionsRead<T> {
  const byFlag = new Map<string, string>();
  for (const [name, option] of Object.entries(table)) for (const f of option.flags ?? []) byFlag.set(f, name);
  const given = new Map<string, unknown>();
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      rest.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      rest.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const name = byFlag.get(flag);
    if (name === undefined) {
      if (command !== undefined)
        throw new ConfigError(`Unknown option ${flag} (flash ${command} ${flagList(table)})`);
      rest.push(arg);
      continue;
    }
    const option = table[name]!;
    let raw: string;
    if (option.switch) {
      if (eq > 0) throw new ConfigError(`Flag ${flag} takes no value`);
      raw = "true";
    } else if (eq > 0) raw = arg.slice(eq + 1);
    else if (option.optionalValue) raw = "true";
    else {
      const next = argv[i + 1];
      if (next === undefined || (command !== undefined && byFlag.has(next.split("=")[0]!))) {
        throw new ConfigError(`Flag ${flag} needs a value`);
      }
      raw = next;
      i++;
    }
    const value = option.parse(raw, `flag ${flag}`);
    if (option.repeat) given.set(name, [...((given.get(name) as unknown[] | undefined) ?? []), value]);
    else given.set(name, value);
  }

  const values: Record<string, unknown> = {};
  const sources: Record<string, "flag" | "env" | "default"> = {};
  for (const [name, option] of Object.entries(table)) {
    let value: unknown;
    let source: "flag" | "env" | "default" = "default";
    if (given.has(name)) {
      value = given.get(name);
      source = "flag";
    } else {
      for (const variable of option.repeat ? [] : (option.env ?? [])) {
        const raw = env[variable];
        if (raw !== undefined && raw !== "") {
          value = option.parse(raw, `environment variable ${variable}`);
          source = "env";
          break;
        }
      }
    }
    if (value === undefined) value = option.repeat ? [] : option.default;
    if (option.secret && typeof value === "string") addSecret(value);
    values[name] = value;
    sources[name] = source;
  }
  return { values: values as Values<T>, sources: sources as Sources<T>, rest };
}

// --- value parsers, shared by every program's table ---

const LEVELS: Record<string, LogLevel> = {
  NOTSET: "SILENT",
  SILENT: "SILENT",
  TRACE: "TRACE",
  DEBUG: "DEBUG",
  INFO: "INFO",
  WARN: "WARN",
  WARNING: "WARN",
  ERROR: "ERROR",
};

export function logLevel(raw: string, source: string): LogLevel {
  const level = LEVELS[raw.trim().toUpperCase()];
  if (!level) {
    throw new ConfigError(
      `Invalid log level "${raw}" in ${source}: expected one of DEBUG, INFO, WARNING (or WARN), ERROR, TRACE, NOTSET`,
    );
  }
  return level;
}

export function logFormat(raw: string, source: string): LogFormat {
  const format = raw.trim().toLowerCase();
  if (format === "text" || format === "json") return format;
  throw new ConfigError(`Invalid log format "${raw}" in ${source}: expected text or json`);
}

export function integer(min: number, max: number) {
  return (raw: string, source: string): number => {
    const value = Number(raw);
    if (!/^\s*-?\d+\s*$/.test(raw) || value < min || value > max) {
      throw new ConfigError(
        `Invalid value "${raw}" in ${source}: expected a whole number from ${min} to ${max}`,
      );
    }
    return value;
  };
}

export const text = (raw: string): string => raw;

export function apiKey(raw: string, source: string): string {
  if (!/^[\x21-\x7e]+$/.test(raw)) {
    throw new ConfigError(`Invalid API key in ${source}: expected printable characters without spaces`);
  }
  return raw;
}

/** An http(s) base URL, without a trailing slash. */
export function httpUrl(raw: string, source: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new ConfigError(`Invalid URL "${raw}" in ${source}: expected http://host:port or https://host`);
  }
  return raw.replace(/\/+$/, "");
}

/** The spellings runpod-python accepts for a switch, and their opposites. */
export function onOff(raw: string, source: string): boolean {
  const value = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off"].includes(value)) return false;
  throw new ConfigError(`Invalid value "${raw}" in ${source}: expected true or false (or 1/0, yes/no)`);
}

export function decimal(min: number, max: number) {
  return (raw: string, source: string): number => {
    const value = Number(raw);
    if (!/^\s*\d+(\.\d+)?\s*$/.test(raw) || value < min || value > max) {
      throw new ConfigError(`Invalid value "${raw}" in ${source}: expected a number from ${min} to ${max}`);
    }
    return value;
  };
}

/** Seconds, as runpod-python reads them, kept in ms. */
export function seconds(max: number) {
  return (raw: string, source: string): number => {
    const value = decimal(0, max)(raw, `${source} (seconds)`);
    if (value === 0)
      throw new ConfigError(`Invalid value "${raw}" in ${source}: expected more than 0 seconds`);
    return value * 1000;
  };
}

export function nonEmpty(raw: string, source: string): string {
  if (raw.trim() === "") throw new ConfigError(`Empty value in ${source}`);
  return raw.trim();
}

/** A switch's option: present means true, absent false. */
export function toggle(flags: readonly string[], help?: string) {
  return { flags, switch: true, parse: (): boolean => true, default: false as boolean, help } as const;
}

/** The log options every program reads (LOG_LEVEL beside LOG_FORMAT, as Lambda's runtime has them). */
export const LOG_OPTIONS = {
  logLevel: {
    flags: ["--log-level", "--rp_log_level"],
    env: ["LOG_LEVEL", "RUNPOD_LOG_LEVEL", "RUNPOD_DEBUG_LEVEL"],
    parse: logLevel,
    default: "INFO" as LogLevel,
    value: "LEVEL",
    help: "DEBUG, INFO, WARNING or ERROR (env LOG_LEVEL)",
  },
  logFormat: { flags: ["--log-format"], env: ["LOG_FORMAT"], parse: logFormat },
} as const satisfies OptionTable;

/** How a program writes its lines: LOG_FORMAT when set; else JSON on the platform (RUNPOD_ENDPOINT_ID set), text here. */
export function logOutput(
  values: Values<typeof LOG_OPTIONS>,
  env: Env,
): { level: LogLevel; json: boolean; format: LogFormat | undefined } {
  // An explicit LOG_FORMAT wins over the platform's JSON lines (json's records carry their keys too).
  return {
    level: values.logLevel,
    json: Boolean(env.RUNPOD_ENDPOINT_ID) && values.logFormat === undefined,
    format: values.logFormat,
  };
}

/** LOG_LEVEL (or RUNPOD_LOG_LEVEL) alone; a bad value keeps INFO, as the toolkit and the SDK do. */
export function logLevelFrom(env: Env = process.env): LogLevel {
  try {
    return readOptions({ logLevel: LOG_OPTIONS.logLevel }, [], env).values.logLevel;
  } catch {
    return "INFO";
  }
}

/** An option given any number of times (`--port 8000/http --port 22/tcp`): its values in order, [] when absent. */
export function repeated<T>(
  flags: readonly string[],
  parse: (raw: string, source: string) => T,
  value: string,
  help: string,
) {
  return { flags, repeat: true, parse, value, help } as const;
}
