// TypeScript that type stripping alone cannot run (enums, namespaces, parameter properties, `./x.js` naming x.ts),
// run by Node's own transform (module.stripTypeScriptTypes in "transform" mode, through module.registerHooks): no
// compiler package needed. The images (Node 24) ship without tsx and esbuild and load such handlers this way.
import * as nodeModule from "node:module";
import { Script } from "node:vm";

type Format = string | null | undefined;
interface Resolved {
  url: string;
  format?: Format;
}
interface Loaded {
  format?: Format;
  source?: string | ArrayBuffer | NodeJS.TypedArray;
  shortCircuit?: boolean;
}
interface Hooks {
  resolve(
    specifier: string,
    context: object,
    next: (specifier: string, context?: object) => Resolved,
  ): Resolved;
  load(url: string, context: object, next: (url: string, context?: object) => Loaded): Loaded;
}
/** What Node ≥ 22.15 / 23.5 (registerHooks) and ≥ 22.13 (stripTypeScriptTypes) add to node:module. */
interface TransformApi {
  registerHooks(hooks: Hooks): unknown;
  stripTypeScriptTypes(
    code: string,
    options: { mode: "transform"; sourceMap: boolean; sourceUrl: string },
  ): string;
}

const api = nodeModule as unknown as Partial<TransformApi>;
let registered = false;

/** Whether this Node can run TypeScript through its own transform (Node 24 can; Node 20 cannot). */
export function canTransformTypeScript(): boolean {
  return typeof api.registerHooks === "function" && typeof api.stripTypeScriptTypes === "function";
}

/** A relative `./x.js` (or .mjs, .cjs) import, as TypeScript sources write them for `./x.ts`. */
const JS_SPECIFIER = /^\.{1,2}\/.*\.(c|m)?js$/;
/** A relative import without a file extension (`./util`, `./user.service`), as CommonJS TypeScript writes them. */
const BARE_RELATIVE = /^\.{1,2}(\/.*)?$/;
const HAS_EXTENSION = /\.(c|m)?(j|t)s$|\.json$|\.node$/;
/** What such an import names, tried in TypeScript's order (`moduleResolution: "node"`). */
const BARE_CANDIDATES = [".ts", ".tsx", ".js", "/index.ts", "/index.js"];
/** V8's complaints about ES module syntax in a script: how Node's own syntax detection tells a module apart. */
const MODULE_ONLY_SYNTAX = [
  "Cannot use import statement outside a module",
  "Unexpected token 'export'",
  "Cannot use 'import.meta' outside a module",
  "await is only valid in async functions and the top level bodies of modules",
];

/**
 * Registers the hooks once for the whole process; false where this Node lacks them. Node hands over a `.ts`
 * file's format ("module-typescript" / "commonjs-typescript", from the file and its package.json) and its source;
 * the hook returns the transformed JavaScript with an inline source map, so stacks name the user's lines.
 */
export function registerTypeScriptTransform(): boolean {
  if (!canTransformTypeScript()) return false;
  if (registered) return true;
  registered = true;
  const { registerHooks, stripTypeScriptTypes } = api as TransformApi;
  registerHooks({
    resolve(specifier, context, next) {
      try {
        return next(specifier, context);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code !== "ERR_MODULE_NOT_FOUND" && code !== "ERR_UNSUPPORTED_DIR_IMPORT") throw err;
        if (JS_SPECIFIER.test(specifier)) return next(specifier.replace(/js$/, "ts"), context);
        if (!BARE_RELATIVE.test(specifier) || HAS_EXTENSION.test(specifier)) throw err;
        for (const suffix of BARE_CANDIDATES) {
          try {
            return next(specifier + suffix, context);
          } catch {
            // not this one: the next candidate, and the original error when none exists
          }
        }
        throw err;
      }
    },
    load(url, context, next) {
      const loaded = next(url, context);
      const format = loaded.format;
      if (format !== "module-typescript" && format !== "commonjs-typescript") return loaded;
      const raw = loaded.source ?? "";
      const source = typeof raw === "string" ? raw : new TextDecoder().decode(raw);
      const js = quietly(() =>
        stripTypeScriptTypes(source, { mode: "transform", sourceMap: true, sourceUrl: url }),
      );
      if (format === "module-typescript") return { format: "module", source: js, shortCircuit: true };
      // A package that says "commonjs" (npm init -y) with a file that imports: run it as the module it is,
      // with the CommonJS names it uses (as tsx, which compiles it to CommonJS, would give it).
      if (hasModuleSyntax(js)) return { format: "module", source: commonJsNames(js), shortCircuit: true };
      return { format: "commonjs", source: js, shortCircuit: true };
    },
  });
  process.setSourceMapsEnabled(true);
  return true;
}

/** Whether `code` only compiles as an ES module: parsed as CommonJS would (in a function), never run. */
function hasModuleSyntax(code: string): boolean {
  try {
    new Script(`(function (exports, require, module, __filename, __dirname) {${code}\n})`);
    return false;
  } catch (err) {
    return err instanceof SyntaxError && MODULE_ONLY_SYNTAX.includes(err.message);
  }
}

/** CommonJS's names that an ES module lacks: each one `code` uses and does not declare itself. */
const COMMONJS_NAMES: Record<string, string> = {
  require: "__flashRequire(import.meta.url)",
  __filename: "import.meta.filename",
  __dirname: "import.meta.dirname",
};

/** `code` with CommonJS's names it uses defined on its first line (one line: the source map stays true below). */
function commonJsNames(code: string): string {
  const used = Object.keys(COMMONJS_NAMES).filter(
    (name) =>
      new RegExp(`\\b${name}\\b`).test(code) &&
      !new RegExp(`\\b(const|let|var|function|class|as)\\s+${name}\\b|[{,]\\s*${name}\\s*[,}]`).test(code),
  );
  if (used.length === 0) return code;
  const names = used.map((name) => `${name} = ${COMMONJS_NAMES[name]}`).join(", ");
  const helper = used.includes("require")
    ? 'import { createRequire as __flashRequire } from "node:module"; '
    : "";
  return `${helper}const ${names}; ${code}`;
}

/** Runs `fn` without Node's one-time "stripTypeScriptTypes is an experimental feature" warning on stderr. */
function quietly<T>(fn: () => T): T {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning.message;
    if (text.startsWith("stripTypeScriptTypes")) return;
    (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return fn();
  } finally {
    process.emitWarning = emit;
  }
}
