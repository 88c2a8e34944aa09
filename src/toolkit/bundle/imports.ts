// The local-import check (docs/toolkit.md §8.1): every relative import of shipped code must land on a shipped file.
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, posix } from "node:path";
import { BuildError } from "./errors.js";

export const CODE_EXTENSIONS = [".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"];
/** Tried in this order for a specifier without an extension, and as `<dir>/index<ext>`. */
const RESOLVE_EXTENSIONS = [...CODE_EXTENSIONS, ".json"];
/** TypeScript ESM imports name the emitted file (`../../toolkit/bundle/a.js`) of a source that is `../../toolkit/bundle/a.ts`. */
const SOURCE_FOR: Record<string, string[]> = {
  ".js": [".ts", ".tsx"],
  ".jsx": [".tsx"],
  ".mjs": [".mts"],
  ".cjs": [".cts"],
};

export const isCode = (path: string): boolean => CODE_EXTENSIONS.includes(posix.extname(path));

/**
 * Module specifiers of a JS/TS source: static imports and re-exports (not `import type`), side-effect
 * imports, `import()` and `require()` with a literal string. Comments are blanked out first.
 */
export function scanImports(source: string): string[] {
  const code = blankComments(source);
  const found: string[] = [];
  const patterns = [
    // No `=` or parentheses between keyword and `from`: `export type A = …` is not an import.
    /\b(?:import|export)\s+(type\s+)?[^;'"`=()]*?\bfrom\s*(["'])([^"'\n]+)\2/g,
    /\bimport\s*()(["'])([^"'\n]+)\2/g,
    /\b(?:import|require)\s*\(\s*()(["'])([^"'\n]+)\2\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of code.matchAll(pattern)) {
      if (!match[1]) found.push(match[3]!);
    }
  }
  return [...new Set(found)];
}

/** Replaces comments with spaces, leaving strings (where `//` may appear in a URL) alone. */
function blankComments(source: string): string {
  let out = "";
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      i = end < 0 ? source.length : end;
      out += " ";
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      i = end < 0 ? source.length : end + 2;
      out += " ";
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < source.length && source[j] !== c) j += source[j] === "\\" ? 2 : 1;
      out += source.slice(i, j + 1);
      i = j + 1;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

type Resolution =
  | { kind: "shipped"; path: string }
  | { kind: "excluded"; path: string }
  | { kind: "missing" };

/** Where a relative specifier lands: a shipped file, a file the ignore rules leave out, or nothing. */
export function resolveLocal(
  root: string,
  shipped: ReadonlySet<string>,
  importer: string,
  spec: string,
): Resolution {
  const base = posix.normalize(posix.join(posix.dirname(importer), spec));
  if (base === ".." || base.startsWith("../") || posix.isAbsolute(base)) return { kind: "missing" };
  const ext = posix.extname(base);
  const stem = base.slice(0, base.length - ext.length);
  const candidates = [
    base,
    ...(SOURCE_FOR[ext] ?? []).map((source) => `${stem}${source}`),
    ...RESOLVE_EXTENSIONS.map((e) => `${base}${e}`),
    ...RESOLVE_EXTENSIONS.map((e) => posix.join(base, `index${e}`)),
  ];
  const hit = candidates.find((path) => shipped.has(path));
  if (hit) return { kind: "shipped", path: hit };
  const onDisk = candidates.find((path) => statSync(join(root, path), { throwIfNoEntry: false })?.isFile());
  return onDisk ? { kind: "excluded", path: onDisk } : { kind: "missing" };
}

/**
 * Checks the relative imports of every shipped code file. Throws the toolkit's message for imports
 * that lead nowhere, and for imports of files the ignore rules exclude. `reachable` adds the paths an import
 * may also land on (a file seen through a shipped link); a link itself is not read.
 */
export function checkLocalImports(
  root: string,
  shippedFiles: readonly string[],
  reachable: readonly string[] = shippedFiles,
): void {
  const shipped = new Set([...shippedFiles, ...reachable]);
  const missing: string[] = [];
  const excluded = new Map<string, Set<string>>();
  for (const file of shippedFiles) {
    if (!isCode(file)) continue;
    const full = join(root, file);
    if (!existsSync(full)) continue;
    for (const spec of scanImports(readFileSync(full, "utf8"))) {
      if (!spec.startsWith("./") && !spec.startsWith("../") && spec !== "." && spec !== "..") continue;
      const resolved = resolveLocal(root, shipped, file, spec);
      if (resolved.kind === "missing") missing.push(`  ${file} imports "${spec}"`);
      if (resolved.kind === "excluded") {
        const importers = excluded.get(resolved.path) ?? new Set<string>();
        importers.add(file);
        excluded.set(resolved.path, importers);
      }
    }
  }
  if (missing.length > 0) {
    throw new BuildError(
      [
        "Relative import could not be resolved to a local file:",
        ...missing,
        "Fix the import, or move the module under the project root.",
      ].join("\n"),
    );
  }
  if (excluded.size > 0) {
    throw new BuildError(
      [
        "Shipped code imports local modules that the build ignore rules (.gitignore, .flashignore or built-in defaults) exclude:",
        ...[...excluded].map(([path, importers]) => `  ${path} (imported by ${[...importers].join(", ")})`),
        "Shipping them would silently override a deliberate exclusion, and omitting them would break the worker with ERR_MODULE_NOT_FOUND. Remove the matching ignore pattern or stop importing these modules from shipped code.",
      ].join("\n"),
    );
  }
}
