// Where the toolkit finds its API key (interface document, "Authentication"; docs/toolkit.md §8.4).

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parse, stringify } from "smol-toml";
import { FlashError } from "../flash-error.js";
import { addSecret, type Logger } from "../log/index.js";

/** Environment variables holding the key, in the order they are read (the document calls it SERVICE_API_KEY). */
export const API_KEY_VARIABLES = ["RUNPOD_API_KEY", "SERVICE_API_KEY"] as const;

/** No key anywhere; the message lists every way to give one. */
export class ApiKeyError extends FlashError {
  readonly code = "API_KEY_MISSING";
  override name = "ApiKeyError";
}

/** The credentials file exists but cannot be read as TOML. */
export class CredentialsFileError extends FlashError {
  readonly code = "CREDENTIALS_FILE_INVALID";
  override name = "CredentialsFileError";
}

export interface ApiKey {
  key: string;
  /** Where it came from, as the log line says it: `environment variable RUNPOD_API_KEY`, `.env file /x/.env`, … */
  source: string;
}

export interface KeyLookup {
  env?: Record<string, string | undefined>;
  /** Home directory holding `.runpod/config.toml` (default: the user's). */
  home?: string;
  /** Directory whose `.env` is read. */
  cwd?: string;
  /** Local CLI commands read `.env`; code running on a deployed worker must not. Default true. */
  dotenv?: boolean;
  /** Gets one line naming the source used. */
  log?: Logger;
}

/** `~/.runpod/config.toml`, where `flash login` saves the key. */
export function credentialsPath(home = homedir()): string {
  return join(home, ".runpod", "config.toml");
}

export function missingKeyMessage(path: string): string {
  return [
    "No API key found. Set one with any of:",
    "",
    `  flash login                                    # prompts for the key, saves it to ${path}`,
    "  flash login --api-key <your-api-key>           # the same without the prompt",
    "  export RUNPOD_API_KEY=<your-api-key>           # environment variable (SERVICE_API_KEY works too)",
    "  echo 'RUNPOD_API_KEY=<your-api-key>' >> .env   # read by local commands only, never sent to workers",
    "",
    "or put the export line in your shell profile (~/.bashrc, ~/.zshrc).",
    "Create a key in the console under Settings > API Keys (permission: All).",
  ].join("\n");
}

/** The `[default] api_key` of the credentials file, undefined when there is no file or no key. */
export function readCredentialsFile(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  let doc: Record<string, unknown>;
  try {
    doc = parse(readFileSync(path, "utf8"));
  } catch (err) {
    const reason = (err as Error).message.split("\n")[0];
    throw new CredentialsFileError(
      `The credentials file ${path} is corrupted (not valid TOML: ${reason}). Run "flash login" again to replace it, or delete the file.`,
    );
  }
  const profile = doc.default;
  const key =
    typeof profile === "object" && profile !== null ? (profile as { api_key?: unknown }).api_key : undefined;
  return typeof key === "string" && key.trim() !== "" ? key.trim() : undefined;
}

/** The `[default] api_url` `flash login --api-url` saved; undefined when there is none (or no readable file). */
export function readSavedApiUrl(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const profile = parse(readFileSync(path, "utf8")).default;
    const url =
      typeof profile === "object" && profile !== null
        ? (profile as { api_url?: unknown }).api_url
        : undefined;
    return typeof url === "string" && url.trim() !== "" ? url.trim() : undefined;
  } catch {
    // A corrupted file is reported where the key is read.
    return undefined;
  }
}

/**
 * Saves the key as `[default] api_key` (and `api_url` when given; other profiles and fields kept), readable by
 * the user only: written to a private temporary file first, then renamed over the old one.
 */
export function saveApiKey(key: string, home = homedir(), apiUrl?: string): string {
  const path = credentialsPath(home);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let doc: Record<string, unknown> = {};
  try {
    if (existsSync(path)) doc = parse(readFileSync(path, "utf8"));
  } catch {
    // A corrupted file is what login is run to fix: it is replaced.
  }
  const profile = typeof doc.default === "object" && doc.default !== null ? doc.default : {};
  // No `api_url` line unless one was given: the file keeps what runpodctl and runpod-python write.
  doc.default = { ...profile, api_key: key, ...(apiUrl ? { api_url: apiUrl } : {}) };
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    const text = stringify(doc);
    writeFileSync(temporary, text.endsWith("\n") ? text : `${text}\n`, { mode: 0o600 });
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
  chmodSync(path, 0o600);
  return path;
}

/** `RUNPOD_API_KEY=` (or `SERVICE_API_KEY=`) in a `.env` file: `export`, quotes and comments allowed. */
export function readDotEnvKey(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const values = new Map<string, string>();
  for (const raw of readFileSync(path, "utf8").split(/\r?\n/)) {
    const match = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(raw);
    if (!match) continue;
    let value = match[2]!;
    const quoted = /^(["'])(.*)\1$/.exec(value);
    value = quoted ? quoted[2]! : value.replace(/\s+#.*$/, "");
    values.set(match[1]!, value);
  }
  for (const name of API_KEY_VARIABLES) {
    const value = values.get(name)?.trim();
    if (value) return value;
  }
  return undefined;
}

/**
 * Finds the key: the environment, then `.env` (local commands only), then the credentials file.
 * Logs which one was used, so a key silently overriding `flash login` is visible.
 */
export function resolveApiKey(lookup: KeyLookup = {}): ApiKey {
  const env = lookup.env ?? process.env;
  const path = credentialsPath(lookup.home);
  const found = findKey(lookup, env, path);
  const log = lookup.log?.child({ subject: "credentials" });
  if (found.source.startsWith("credentials file")) {
    log?.info(`Using API key from ${found.source}`);
  } else {
    let shadowed = false;
    try {
      shadowed = readCredentialsFile(path) !== undefined;
    } catch {
      // Only asked to say whether a saved key is being overridden; a broken file is not used here.
    }
    log?.info(
      `Using API key from ${found.source}${shadowed ? ` (it overrides the key saved by flash login in ${path})` : ""}`,
    );
  }
  return found;
}

function findKey(lookup: KeyLookup, env: Record<string, string | undefined>, path: string): ApiKey {
  const found = findKeyValue(lookup, env, path);
  addSecret(found.key);
  return found;
}

function findKeyValue(lookup: KeyLookup, env: Record<string, string | undefined>, path: string): ApiKey {
  for (const name of API_KEY_VARIABLES) {
    const value = env[name]?.trim();
    if (value) return { key: value, source: `environment variable ${name}` };
  }
  if (lookup.dotenv !== false) {
    const dotenv = resolve(lookup.cwd ?? process.cwd(), ".env");
    const value = readDotEnvKey(dotenv);
    if (value) return { key: value, source: `.env file ${dotenv}` };
  }
  const saved = readCredentialsFile(path);
  if (saved) return { key: saved, source: `credentials file ${path}` };
  throw new ApiKeyError(missingKeyMessage(path));
}
