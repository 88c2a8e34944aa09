// The package as users get it: `npm pack`, installed into a fresh project, then a JavaScript and a TypeScript
// handler run through it, and each export loaded — on this Node, and on every Node named in FLASH_TEST_NODES
// (paths, `:`-separated; CI passes the Node the images ship).
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

const TIMEOUT = 180_000;
const nodes = [process.execPath, ...(process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean)];

describe(
  "the packed package, installed",
  () => {
    let dir = "";

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "flash-pkg-"));
      const out = execFileSync("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], {
        cwd: ROOT,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      });
      const [{ filename }] = JSON.parse(out) as [{ filename: string }];
      writeFileSync(
        join(dir, "package.json"),
        JSON.stringify({
          name: "app",
          type: "module",
          dependencies: { "flash-worker": `file:./${filename}` },
        }),
      );
      execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], {
        cwd: dir,
        stdio: "ignore",
      });
      writeFileSync(
        join(dir, "handler.mjs"),
        'import { handler } from "flash-worker";\nexport default handler((job) => ({ js: job.input.n + 1 }));\n',
      );
      writeFileSync(
        join(dir, "handler.ts"),
        [
          'import { handler } from "flash-worker";',
          "interface In { n: number }",
          "export default handler((job: { input: In }) => ({ ts: job.input.n * 2 }));",
          "",
        ].join("\n"),
      );
      writeFileSync(
        join(dir, "exports.mjs"),
        [
          'import * as main from "flash-worker";',
          'import * as client from "flash-worker/client";',
          'import * as testing from "flash-worker/testing";',
          "const { result } = await testing.runJob(main.handler((job) => job.input), { ok: true });",
          "console.log(JSON.stringify({ main: typeof main.Endpoint, client: typeof client.endpoint, result }));",
          "",
        ].join("\n"),
      );
    }, TIMEOUT);

    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const run = (node: string, args: string[]) =>
      spawnSync(node, args, { cwd: dir, encoding: "utf8", env: { PATH: process.env.PATH, HOME: dir } });

    for (const node of nodes) {
      const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();

      it(`node ${version}: \`node handler.mjs\` and \`flash run handler.ts\` answer their test input`, () => {
        const js = run(node, ["handler.mjs", "--test_input", '{"input": {"n": 1}}']);
        expect(js.status, js.stderr).toBe(0);
        expect(js.stdout + js.stderr).toContain('{"output":{"js":2}}');
        const flash = join(dir, "node_modules", "flash-worker", "dist", "cli", "main.js");
        const ts = run(node, [flash, "run", "handler.ts", "--test-input", '{"input": {"n": 4}}']);
        expect(ts.status, ts.stderr).toBe(0);
        expect(ts.stdout + ts.stderr).toContain('{"output":{"ts":8}}');
      });

      it(`node ${version}: every export loads from the installed package`, () => {
        const out = run(node, ["exports.mjs"]);
        expect(out.status, out.stderr).toBe(0);
        expect(JSON.parse(out.stdout)).toEqual({
          main: "function",
          client: "function",
          result: { output: { ok: true } },
        });
      });
    }
  },
  TIMEOUT,
);
