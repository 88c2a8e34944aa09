// Every TypeScript block in README.md and docs/ compiles, in strict mode, against the built package's types:
// the docs are part of the product, and a renamed or moved export breaks them here before a user copies them.
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type Snippet, snippets } from "../e2e/snippets.js";
import { ROOT } from "../process.js";

const DOCS = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];
const blocks = DOCS.flatMap(snippets).filter((s) => s.lang === "ts");

/** Inside the repository, so `openai`, `zod`, `vitest` and `@opentelemetry/api` resolve from its node_modules. */
const WORK = join(ROOT, "node_modules", ".cache", "flash-doc-snippets");

/** What the docs leave to the reader ("your work", your key): declared, so the rest is checked strictly. */
const PLACEHOLDERS = `
declare global {
  const apiKey: string;
  const model: string;
  const messages: Array<{ role: "system" | "user" | "assistant"; content: string }>;
  function render(path: string, steps: number): Promise<Uint8Array>;
  function generate(modelDir: string, input: unknown): Promise<unknown>;
}
export {};
`;

const importLines = (text: string) => text.split("\n").filter((line) => /^import\b/.test(line));

/** A block with no imports continues the one before it in its section (a variant of it): it gets that one's imports. */
function withImports(block: Snippet, index: number): string {
  if (importLines(block.text).length > 0) return block.text;
  const before = blocks
    .slice(0, index)
    .reverse()
    .find((b) => b.file === block.file && b.section === block.section && importLines(b.text).length > 0);
  return before ? `${importLines(before.text).join("\n")}\n${block.text}` : block.text;
}

/** The handler module a block imports as ./handler: the nearest earlier block of its file that exports one. */
function handlerFor(index: number): string | undefined {
  const file = blocks[index]!.file;
  return blocks
    .slice(0, index)
    .reverse()
    .find(
      (b) =>
        b.file === file && /^export default handler\(|^remote\(/m.test(b.text) && importLines(b.text).length,
    )?.text;
}

describe("TypeScript in README.md and docs/", () => {
  it("is there to check: the README's handler, client, testing, GPU and files blocks", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(15);
    for (const entry of ["", "/client", "/testing", "/gpu", "/files"].map((e) => `from "flash-worker${e}"`)) {
      expect(blocks.some((b) => b.text.includes(entry))).toBe(true);
    }
  });

  it("compiles in strict mode against dist/'s declarations, each block a module of its own", {
    timeout: 120_000,
  }, () => {
    rmSync(WORK, { recursive: true, force: true });
    mkdirSync(WORK, { recursive: true });
    writeFileSync(join(WORK, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(WORK, "placeholders.d.ts"), PLACEHOLDERS);
    const include = ["placeholders.d.ts"];
    blocks.forEach((block, i) => {
      const dir = `block-${String(i).padStart(2, "0")}`;
      mkdirSync(join(WORK, dir));
      const where = `// ${block.file}, "${block.section}"\n`;
      writeFileSync(join(WORK, dir, "snippet.ts"), where + withImports(block, i));
      include.push(`${dir}/snippet.ts`);
      if (/["']\.\/handler\.(js|ts)["']/.test(block.text)) {
        const handler = handlerFor(i);
        expect(
          handler,
          `${block.file} "${block.section}" imports ./handler, and no block before it is one`,
        ).toBeDefined();
        writeFileSync(join(WORK, dir, "handler.ts"), handler!);
      }
    });
    // Each entry point where package.json's "exports" publishes it: "flash-worker/files" is dist/runtime/files/.
    const exportsField = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).exports as Record<
      string,
      unknown
    >;
    const paths = Object.fromEntries(
      Object.entries(exportsField).flatMap(([key, value]) => {
        const types = (value as { types?: string }).types;
        return types ? [[`flash-worker${key.slice(1)}`, [join(ROOT, types)]]] : [];
      }),
    );
    const tsconfig = {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: "es2022",
        module: "nodenext",
        moduleResolution: "nodenext",
        allowImportingTsExtensions: true,
        skipLibCheck: true,
        types: ["node"],
        paths,
      },
      include,
    };
    writeFileSync(join(WORK, "tsconfig.json"), JSON.stringify(tsconfig, null, 2));
    let out = "";
    try {
      execFileSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", WORK], {
        encoding: "utf8",
      });
    } catch (error) {
      out = String((error as { stdout?: string }).stdout ?? error);
    }
    // Each error names its block's file (block-NN/snippet.ts), whose first line says where in the docs it is.
    expect(out).toBe("");
  });
});
