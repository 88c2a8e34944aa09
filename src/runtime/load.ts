// Loading the user's app file: found by name or default, imported (TypeScript too), and its app picked.
import { existsSync } from "node:fs";
import { basename, dirname, extname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { FlashError } from "../errors.js";
import { type App, registry, versionMismatch } from "./registry.js";
import { compiledHandler } from "./ts-cache.js";

const DEFAULT_FILES = ["handler.ts", "handler.js", "handler.mjs", "src/handler.ts", "src/handler.js"];

export class LoadError extends FlashError {
  readonly code = "LOAD_FAILED";
  override name = "LoadError";
}

/** The handler file named on the command line, or the first default that exists in the working directory. */
export function findHandlerFile(given: string | undefined): string {
  if (given) {
    const path = resolve(given);
    if (!existsSync(path)) throw new LoadError(`Handler file not found: ${given}`);
    return path;
  }
  const found = DEFAULT_FILES.map((f) => resolve(f)).find((path) => existsSync(path));
  if (!found)
    throw new LoadError(`No handler file given and none of ${DEFAULT_FILES.join(", ")} exists here.`);
  return found;
}

function isApp(value: unknown): value is App {
  const kind = typeof value === "object" && value !== null ? (value as { kind?: unknown }).kind : undefined;
  return kind === "handler" || kind === "endpoint";
}

type Module = { default?: unknown };

/** Errors of Node's own TypeScript loading that tsx gets past (syntax it cannot strip, `./x.js` for x.ts, .tsx). */
const TS_FALLBACK_CODES = new Set([
  "ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX",
  "ERR_MODULE_NOT_FOUND",
  "ERR_UNKNOWN_FILE_EXTENSION",
  "ERR_REQUIRE_ESM",
]);

let tsxRegistered = false;

/**
 * TypeScript through Node's built-in type stripping where the runtime has it (Node ≥ 22.18, 24):
 * no compiler to load, so workers start sooner. Elsewhere (Node 20) the file compiled once by esbuild,
 * from a cache keyed by content. Anything neither can load goes through tsx.
 */
async function importTypeScript(url: string): Promise<Module> {
  const features = process.features as { typescript?: string | false };
  if (features.typescript && !process.env.FLASH_USE_TSX) {
    try {
      return (await import(url)) as Module;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (!(err instanceof SyntaxError) && !(typeof code === "string" && TS_FALLBACK_CODES.has(code)))
        throw err;
    }
    // Node keeps the failed load of these URLs: tsx loads them again under its own namespace (a second
    // module graph; flash-worker's values and registry are shared through globalThis, so nothing is lost).
    const { tsImport } = await import("tsx/esm/api");
    return (await tsImport(url, import.meta.url)) as Module;
  }
  if (!process.env.FLASH_USE_TSX) {
    const compiled = await compiledHandler(fileURLToPath(url));
    if (compiled) return (await import(compiled)) as Module;
  }
  // tsx's hooks for the whole process: the app's `import "flash-worker"` resolves to the running copy.
  if (!tsxRegistered) {
    const { register } = await import("tsx/esm/api");
    register();
    tsxRegistered = true;
  }
  return (await import(url)) as Module;
}

/** Imports the user's file (TypeScript natively or through tsx) and returns the app it registered or exports. */
export async function loadApp(file: string): Promise<App> {
  const reg = registry();
  reg.managed = true;
  const url = pathToFileURL(file).href;
  const mod = [".ts", ".mts", ".cts", ".tsx"].includes(extname(file))
    ? await importTypeScript(url)
    : ((await import(url)) as Module);
  const mismatch = versionMismatch();
  if (mismatch) process.stderr.write(`flash-worker: warning: ${mismatch}\n`);
  let app = isApp(mod.default) ? mod.default : reg.app;
  if (!app && reg.remotes.size > 0) {
    const { withRemoteFunctions } = await import("./remote.js");
    app = withRemoteFunctions(undefined);
  }
  if (!app) {
    throw new LoadError(
      `${file} registered no handler: call handler(fn) from "flash-worker" (and export its result as default).`,
    );
  }
  return app;
}

/** A readable endpoint id from the handler's path: examples/echo/handler.ts → "echo". */
export function endpointIdFor(file: string): string {
  const stem = basename(file, extname(file));
  const name = ["handler", "index", "main", "worker"].includes(stem) ? basename(dirname(file)) : stem;
  const id = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+|[-_]+$/g, "");
  return id.slice(0, 64) || "local";
}
