// TypeScript handlers compiled once by esbuild into a cache keyed by content: used, invalidated, bypassed.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { compiledHandler } from "../../src/app/ts-cache.js";
import { flash } from "../process.js";

const work = mkdtempSync(join(tmpdir(), "flash-ts-cache-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A project folder with the given files and its own cache folder. */
function project(name: string, files: Record<string, string>): { dir: string; cache: string } {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, path), text);
  return { dir, cache: join(work, `${name}-cache`) };
}

describe("compiledHandler", () => {
  it("bundles local imports, keeps packages as imports, and reuses the cached module while the sources are unchanged", async () => {
    const { dir, cache } = project("a", {
      "handler.ts": `import { shout } from "./lib.js";\nimport { basename } from "node:path";\nconst n: number = 2;\nexport default { value: shout("hi") + n, base: basename("/x/y") };\n`,
      "lib.ts": `export const shout = (s: string): string => s.toUpperCase();\n`,
    });
    const first = await compiledHandler(join(dir, "handler.ts"), cache);
    expect(first).toMatch(/^file:\/\/.*\.mjs$/);
    expect(((await import(first!)) as { default: unknown }).default).toEqual({ value: "HI2", base: "y" });
    const code = readFileSync(fileURLToPath(first!), "utf8");
    expect(code).toContain("toUpperCase"); // lib.ts is inside the module
    expect(code).toMatch(/from "node:path"/); // the builtin stays an import

    // Proof that the second start reads the cache rather than compiling again: a marker written into the
    // cached module comes back.
    writeFileSync(fileURLToPath(first!), 'export default "from the cache";\n');
    const second = await compiledHandler(join(dir, "handler.ts"), cache);
    expect(second).toBe(first);
    expect(readFileSync(fileURLToPath(second!), "utf8")).toBe('export default "from the cache";\n');

    // A change to an imported file, not the handler itself, makes a new module.
    project("a", { "lib.ts": `export const shout = (s: string): string => s.toLowerCase();\n` });
    const third = await compiledHandler(join(dir, "handler.ts"), cache);
    expect(third).not.toBe(first);
    expect(((await import(third!)) as { default: unknown }).default).toEqual({ value: "hi2", base: "y" });
    expect(readdirSync(cache).filter((f) => f.endsWith(".json"))).toHaveLength(1);
  });

  it("leaves files bound to their own location to tsx", async () => {
    const { dir, cache } = project("b", {
      "handler.ts": `export default new URL("./data.json", import.meta.url).href;\n`,
      "cjs.ts": `export default __dirname;\n`,
    });
    expect(await compiledHandler(join(dir, "handler.ts"), cache)).toBeUndefined();
    expect(await compiledHandler(join(dir, "cjs.ts"), cache)).toBeUndefined();
  });

  it("leaves what esbuild cannot compile to tsx, and a cache it cannot write", async () => {
    const { dir, cache } = project("c", {
      "broken.ts": `export default (;\n`,
      "missing.ts": `import x from "./nowhere.js";\nexport default x;\n`,
      "ok.ts": `export default 1;\n`,
      "file-not-folder": "",
    });
    expect(await compiledHandler(join(dir, "broken.ts"), cache)).toBeUndefined();
    expect(await compiledHandler(join(dir, "missing.ts"), cache)).toBeUndefined();
    expect(await compiledHandler(join(dir, "ok.ts"), join(dir, "file-not-folder"))).toBeUndefined();
  });
});

describe("flash run with a .ts handler on a Node without type stripping", () => {
  const stripping = Boolean((process.features as { typescript?: unknown }).typescript);
  it.skipIf(stripping)("runs the example through the cache, the first time and the next", async () => {
    const cache = join(work, "cli-cache");
    for (const round of [1, 2]) {
      const run = flash(["run", "examples/echo/handler.ts"], { FLASH_TS_CACHE: cache });
      expect(await run.exited).toBe(0);
      expect(run.stderr.join("\n")).toContain("completed successfully");
      expect(
        readdirSync(cache).filter((f) => f.endsWith(".mjs")),
        `round ${round}`,
      ).toHaveLength(1);
    }
  });
});
