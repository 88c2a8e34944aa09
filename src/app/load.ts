// Loading the user's app file: found by name or default, imported (TypeScript too), and its app picked.
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { FlashError } from "../flash-error.js";
import { flushLog } from "../log/index.js";
import { stackText, userStack } from "../log/stack.js";
import { type App, registry, versionMismatch } from "./registry.js";

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

/** The nearest package.json's `type`, which decides how Node runs a `.ts` file ("commonjs" by `npm init`). */
function packageType(file: string): unknown {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type;
      } catch {
        return undefined;
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * TypeScript through Node's built-in type stripping where the runtime has it (Node ≥ 22.18, 24):
 * no compiler to load, so workers start sooner. Elsewhere (Node 20) the file compiled once by esbuild,
 * from a cache keyed by content. Where esbuild is not installed (the images), Node's own transform runs what
 * stripping cannot (an enum). Anything none can load goes through tsx, and so does a `.ts` file
 * in a CommonJS package on Node's own loader, whose `import` statements Node would refuse (with a warning).
 */
async function importTypeScript(file: string, url: string): Promise<Module> {
  const features = process.features as { typescript?: string | false };
  const native =
    features.typescript &&
    !process.env.FLASH_USE_TSX &&
    !(extname(file) === ".ts" && packageType(file) === "commonjs");
  if (native) {
    try {
      return (await import(url)) as Module;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (!(err instanceof SyntaxError) && !(typeof code === "string" && TS_FALLBACK_CODES.has(code)))
        throw err;
    }
  }
  if (!process.env.FLASH_USE_TSX) {
    // Loaded here: only a TypeScript handler Node cannot strip needs it (and node:crypto, for the cache key).
    const { compiledHandler } = await import("./ts-cache.js");
    const compiled = await compiledHandler(file);
    if (compiled) return (await import(compiled)) as Module;
    const { registerTypeScriptTransform } = await import("./ts-transform.js");
    if (registerTypeScriptTransform()) {
      try {
        return (await import(`${url}?transform`)) as Module;
      } catch (err) {
        // What the transform cannot run (JSX, decorators) is tsx's, where it is installed.
        if (!tsxInstalled()) throw err;
      }
    }
  }
  if (!tsxInstalled()) {
    throw new LoadError(
      `${file} needs a TypeScript loader: Node ${process.version} cannot run it itself and tsx is not installed (run it on Node 24, as the images do, or npm install tsx)`,
    );
  }
  await registerTsx();
  // Node keeps a failed import's error for its URL: a second try needs another.
  return (await import(native ? `${url}?tsx` : url)) as Module;
}

let tsxRegistered = false;

/** Whether tsx resolves from here: the package's dependency, left out of the images (Node 24 runs TypeScript). */
function tsxInstalled(): boolean {
  try {
    import.meta.resolve("tsx/esm/api");
    return true;
  } catch {
    return false;
  }
}

/**
 * tsx's hooks for both module kinds and the whole process, as `node --import tsx` installs them: the app's
 * `import "flash-worker"` resolves to the running copy. Not tsImport's namespaced form: it runs a CommonJS
 * app's file from a data: URL, whose stack frames carry the whole compiled source.
 */
async function registerTsx(): Promise<void> {
  if (tsxRegistered) return;
  tsxRegistered = true;
  const [cjs, esm] = await Promise.all([import("tsx/cjs/api"), import("tsx/esm/api")]);
  cjs.register();
  esm.register();
}

/** Imports the user's file (TypeScript natively or through tsx) and returns the app it registered or exports. */
export async function loadApp(file: string): Promise<App> {
  const reg = registry();
  reg.managed = true;
  const url = pathToFileURL(file).href;
  let mod: Module;
  flushLog(); // the user's module code may block: lines logged before it go out first
  try {
    mod = [".ts", ".mts", ".cts", ".tsx"].includes(extname(file))
      ? await importTypeScript(file, url)
      : ((await import(url)) as Module);
  } catch (err) {
    // The stack names the file and line that threw; a message alone leaves the user guessing.
    throw new LoadError(`${file} failed to load: ${userStack(stackText(err, String(err)))}`, {
      cause: err,
    });
  }
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

/** Lowercase letters, digits, `-` and `_`, at most 64: what endpoint ids may be. */
export function endpointSlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+|[-_]+$/g, "");
  return slug.slice(0, 64) || "endpoint";
}

/**
 * The endpoint id, one rule for `flash dev` and `flash deploy`: the Endpoint's `name` made URL-safe, else the
 * handler's file name, or its folder's for `handler`/`index`/`main`/`worker` files (examples/echo/handler.ts → "echo").
 */
export function endpointIdFor(file: string, name?: string): string {
  if (name) return endpointSlug(name);
  const stem = basename(file, extname(file));
  return endpointSlug(["handler", "index", "main", "worker"].includes(stem) ? basename(dirname(file)) : stem);
}
