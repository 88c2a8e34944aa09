// The docs inside src/: each module's first line says what it is for, and every docs/ section cited exists.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const SRC = join(ROOT, "src");

/** `docs/<name>.md §<section>` citations, with the file that makes each one. */
function citations(): Array<{ file: string; doc: string; section: string }> {
  const found: Array<{ file: string; doc: string; section: string }> = [];
  const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
  for (const file of files) {
    const text = readFileSync(join(SRC, file), "utf8");
    for (const match of text.matchAll(/(docs\/[\w-]+\.md)((?:,? ?(?:§[\dA-Z.]+[–-]?)+)+)/g)) {
      for (const section of match[2]!.matchAll(/§([\dA-Z][\dA-Z.]*?)\.?(?=[^\dA-Z.]|$)/g)) {
        found.push({ file, doc: match[1]!, section: section[1]! });
      }
    }
  }
  return found;
}

/** A `## N` / `### N.M` heading, or item `M.` of the numbered list under `## N`. */
function hasSection(text: string, section: string): boolean {
  const headings = text.match(/^#{2,3} [\dA-Z.]+/gm) ?? [];
  if (headings.some((h) => h.split(" ")[1]!.replace(/\.$/, "") === section)) return true;
  const [parent, item] = section.split(".");
  const start = text.search(new RegExp(`^## ${parent}\\. `, "m"));
  if (start < 0 || item === undefined) return false;
  const rest = text.slice(start + 3);
  const body = rest.slice(0, rest.search(/^## /m) >>> 0);
  return new RegExp(`^${item}\\. `, "m").test(body);
}

describe("docs cited by the code", () => {
  const cited = citations();

  it("are many, and none points outside the repository", () => {
    expect(cited.length).toBeGreaterThan(60);
    const outside = /\b(?:DESIGN|worker-protocol|flash-toolkit|peers|dependencies\.md) ?§/;
    const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    expect(files.filter((f) => outside.test(readFileSync(join(SRC, f), "utf8")))).toEqual([]);
  });

  it("name documents and sections that exist", () => {
    const missing = cited.filter(({ doc, section }) => {
      const path = join(ROOT, doc);
      return !existsSync(path) || !hasSection(readFileSync(path, "utf8"), section);
    });
    expect(missing).toEqual([]);
  });
});

describe("module purpose lines", () => {
  it("open every file under src/ (after a shebang) with a one-line `//` comment", () => {
    const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(100);
    const without = files.filter((file) => {
      const lines = readFileSync(join(SRC, file), "utf8").split("\n");
      const first = lines[0]!.startsWith("#!") ? lines[1]! : lines[0]!;
      return !/^\/\/ \S/.test(first);
    });
    expect(without).toEqual([]);
  });
});
