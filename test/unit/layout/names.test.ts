// Names say whose: no file of src/ has the name of a file one folder up (cli/deploy.ts beside cli/deploy/deploy.ts
// made a reader guess which was the command); a folder's index.ts is its entry and exempt.
import { existsSync, readdirSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const SRC = join(ROOT, "src");

/** Files whose name is also a file's name in the folder above: `a/b/x.ts` when `a/x.ts` exists. */
function repeatedNames(root: string): string[] {
  const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
  return files
    .filter((file) => basename(file) !== "index.ts" && dirname(file) !== ".")
    .filter((file) => existsSync(join(root, dirname(dirname(file)), basename(file))))
    .map((file) => `${join(dirname(dirname(file)), basename(file))} ~ ${file}`)
    .sort();
}

describe("src/ names", () => {
  it("the finder sees a name repeated one folder down", () => {
    expect(repeatedNames(join(ROOT, "test/unit/layout/fixtures/names"))).toEqual([
      "cli/deploy.ts ~ cli/deploy/deploy.ts",
    ]);
  });

  it("repeats no file's name one folder down (index.ts excepted)", () => {
    expect(repeatedNames(SRC)).toEqual([]);
  });
});
