// The micro-optimisations and process-wide tricks that read like bugs each live in one named module, or nowhere.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const SRC = join(ROOT, "src");

/** Every TypeScript source under src/, as [path from the root, text]. */
function sources(dir = SRC): [string, string][] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry): [string, string][] => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    if (!/\.(?:ts|mts|mjs)$/.test(entry.name)) return [];
    return [[relative(ROOT, path), readFileSync(path, "utf8")]];
  });
}

const files = sources();
const where = (pattern: RegExp) => files.filter(([, text]) => pattern.test(text)).map(([path]) => path);

describe("oddities in src/", () => {
  it("has no test-runner check: production code never reads process.env.VITEST", () => {
    expect(where(/process\.env\.VITEST|process\.env\[["']VITEST["']\]/)).toEqual([]);
  });

  it("calls Buffer's undocumented string methods only in src/payload/buffer-internals.ts", () => {
    expect(where(/\b(?:latin1Slice|utf8Write|asciiSlice|hexSlice)\b/)).toEqual([
      "src/payload/buffer-internals.ts",
    ]);
  });

  it("replaces process.stdout.write and process.stderr.write only in src/log/stdout.ts", () => {
    expect(where(/process\.std(?:out|err)\.write\s*=[^=]|\bstream\.write\s*=[^=]/)).toEqual([
      "src/log/stdout.ts",
    ]);
  });
});
