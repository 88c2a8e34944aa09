// TypeScript handlers where no compiler is installed, as in the images (docker/install.sh leaves tsx and esbuild
// out on a Node that transforms TypeScript itself): flash-worker's dist/ with every other package beside it.
// An enum (which type stripping alone refuses) and `./x.js` naming x.ts run on Node 24 through Node's own
// transform, with stack lines of the .ts file; a Node without it says what to do. Node 24 comes from
// FLASH_TEST_NODES (CI passes the images' node).
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

const nodes = [process.execPath, ...(process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean)];
/** What install.sh removes from the image: the TypeScript compilers and what only they need. */
const COMPILERS = new Set(["tsx", "esbuild", "@esbuild", "get-tsconfig", "resolve-pkg-maps", ".bin"]);

const canTransform = (node: string) =>
  spawnSync(
    node,
    [
      "-p",
      'const m = require("node:module"); typeof m.registerHooks === "function" && typeof m.stripTypeScriptTypes === "function"',
    ],
    { encoding: "utf8" },
  ).stdout.trim() === "true";

describe("a .ts handler with an enum, no tsx or esbuild installed", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "flash-nocompiler-"));
    const pkg = join(dir, "node_modules", "flash-worker");
    mkdirSync(pkg, { recursive: true });
    cpSync(join(ROOT, "dist"), join(pkg, "dist"), { recursive: true });
    cpSync(join(ROOT, "package.json"), join(pkg, "package.json"));
    for (const name of readdirSync(join(ROOT, "node_modules"))) {
      if (!COMPILERS.has(name))
        symlinkSync(join(ROOT, "node_modules", name), join(dir, "node_modules", name));
    }
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(app, "colors.ts"), 'export enum Color {\n  Red = "red",\n  Green = "green",\n}\n');
    writeFileSync(
      join(app, "handler.ts"),
      [
        'import { handler } from "flash-worker";',
        'import { Color } from "./colors.js";',
        "enum Size { Small = 1, Large = 10 }",
        "export default handler<{ big: boolean }>((job) => {",
        '  if (job.input.big === undefined) throw new RangeError("no size");',
        "  return { color: Color.Green, size: job.input.big ? Size.Large : Size.Small };",
        "});",
        "",
      ].join("\n"),
    );
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const start = (node: string, input: unknown) =>
    spawnSync(
      node,
      [
        join(dir, "node_modules/flash-worker/dist/cli/main.js"),
        "start",
        "handler.ts",
        "--test_input",
        JSON.stringify(input),
      ],
      {
        cwd: join(dir, "app"),
        encoding: "utf8",
        env: { PATH: process.env.PATH ?? "", HOME: dir },
        timeout: 60_000,
      },
    );

  for (const node of nodes) {
    const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
    if (canTransform(node)) {
      it(`Node ${version}: runs through Node's own transform, stack lines in handler.ts, no warning`, () => {
        const ok = start(node, { input: { big: true } });
        expect(ok.stdout + ok.stderr).toContain('{"output":{"color":"green","size":10}}');
        expect(ok.status, ok.stderr).toBe(0);
        expect(ok.stderr).not.toContain("ExperimentalWarning");
        const failed = start(node, { input: {} });
        expect(failed.stdout + failed.stderr).toContain("RangeError: no size");
        expect(failed.stdout + failed.stderr).toMatch(/handler\.ts:5:\d+/);
      });
    } else {
      it(`Node ${version}: no loader for it here, and the message says what to do`, () => {
        const run = start(node, { input: { big: true } });
        expect(run.status).not.toBe(0);
        expect(run.stdout + run.stderr).toContain(
          `handler.ts needs a TypeScript loader: Node ${version} cannot run it itself and tsx is not installed (run it on Node 24, as the images do, or npm install tsx)`,
        );
      });
    }
  }
});
