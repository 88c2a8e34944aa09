// Legible units: no function over 150 lines but the pickle decoder's opcode switch, and few conditional spreads
// (`...(x ? { k: x } : {})`), kept only where a key's absence means something on the wire, each with its reason.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const SRC = join(ROOT, "src");
const files = readdirSync(SRC, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));

/** Every function-like node with a body, as "file:line name" and its length in lines. */
function functions(): { where: string; lines: number }[] {
  const found: { where: string; lines: number }[] = [];
  for (const file of files) {
    const source = ts.createSourceFile(
      file,
      readFileSync(join(SRC, file), "utf8"),
      ts.ScriptTarget.Latest,
      true,
    );
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && "body" in node && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const end = source.getLineAndCharacterOfPosition(node.end).line;
        const named =
          node.name?.getText(source) ??
          (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(source) : "<anonymous>");
        found.push({ where: `${file}:${start + 1} ${named}`, lines: end - start + 1 });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const SPREAD = /\.\.\.\([^()]*\?\s*\{[^{}]*\}\s*:\s*\{\}\)|\.\.\.\([^()]*\?\s*\{\}\s*:\s*\{[^{}]*\}\)/;

describe("src/ sizes", () => {
  it("no function is over 150 lines but the pickle decoder's opcode switch", () => {
    const all = functions();
    expect(all.length).toBeGreaterThan(1000);
    const long = all.filter((f) => f.lines > 150).map((f) => f.where);
    // by file and name: the switch's line moves with every edit above it
    expect(long.map((where) => where.replace(/:\d+ /, " ")).sort()).toEqual(["payload/decode.ts run"]);
  });

  it("keeps at most 20 conditional spreads, each under a comment saying why", () => {
    const spreads: { where: string; reason: boolean }[] = [];
    for (const file of files) {
      const lines = readFileSync(join(SRC, file), "utf8").split("\n");
      lines.forEach((line, i) => {
        if (!SPREAD.test(line)) return;
        // The reason: a comment just above the spread, or above the run of spreads it belongs to.
        let above = i - 1;
        while (above >= 0 && SPREAD.test(lines[above]!)) above--;
        const reason = /^\s*\/\//.test(lines[above] ?? "");
        spreads.push({ where: `${file}:${i + 1}`, reason });
      });
    }
    expect(spreads.length).toBeGreaterThan(0);
    expect(spreads.length).toBeLessThanOrEqual(20);
    expect(spreads.filter((s) => !s.reason).map((s) => s.where)).toEqual([]);
  });
});
