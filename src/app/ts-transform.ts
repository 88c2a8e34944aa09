// TypeScript that type stripping alone cannot run (enums, namespaces, parameter properties, `./x.js` naming x.ts),
// run by Node's own transform (module.stripTypeScriptTypes in "transform" mode, through module.registerHooks): no
// compiler package needed. The images (Node 24) ship without tsx and esbuild and load such handlers this way.
import * as nodeModule from "node:module";

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
        if ((err as { code?: unknown }).code !== "ERR_MODULE_NOT_FOUND" || !JS_SPECIFIER.test(specifier))
          throw err;
        return next(specifier.replace(/js$/, "ts"), context);
      }
    },
    load(url, context, next) {
      const loaded = next(url, context);
      const format = loaded.format;
      if (format !== "module-typescript" && format !== "commonjs-typescript") return loaded;
      const raw = loaded.source ?? "";
      const source = typeof raw === "string" ? raw : new TextDecoder().decode(raw);
      return {
        format: format === "module-typescript" ? "module" : "commonjs",
        source: quietly(() =>
          stripTypeScriptTypes(source, { mode: "transform", sourceMap: true, sourceUrl: url }),
        ),
        shortCircuit: true,
      };
    },
  });
  process.setSourceMapsEnabled(true);
  return true;
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
