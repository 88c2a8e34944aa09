// CONTRIBUTING.md's snippets are the code: each ```ts block that names a file in its first line is in that file.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const text = readFileSync(join(ROOT, "CONTRIBUTING.md"), "utf8");
const snippets = [...text.matchAll(/```ts\n\/\/ ([\w./-]+)\n([\s\S]*?)```/g)].map((m) => ({
  file: m[1]!,
  code: m[2]!,
}));

describe("CONTRIBUTING.md", () => {
  it("shows code from the repository", () => {
    expect(snippets.length).toBeGreaterThanOrEqual(4);
  });

  for (const { file, code } of snippets) {
    it(`quotes ${file} as it is`, () => {
      expect(readFileSync(join(ROOT, file), "utf8")).toContain(code);
    });
  }

  it("names commands that exist in package.json and files that exist", () => {
    const scripts = Object.keys(
      (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> })
        .scripts,
    );
    for (const [, name] of text.matchAll(/npm run ([\w:]+)/g)) expect(scripts).toContain(name);
    const paths = [...text.matchAll(/`((?:src|test|scripts|docs)\/[\w./-]+\.(?:ts|mjs|md))`/g)].map(
      (m) => m[1]!,
    );
    expect(paths.length).toBeGreaterThan(5);
    expect(paths.filter((path) => !existsSync(join(ROOT, path)))).toEqual([]);
  });
});
