// The package as users get it: `npm pack`, added to a project made by `npm init -y` (a CommonJS app) and to
// an ES module app beside it, then handlers run through it, a worker called over HTTP, and each export
// loaded — on this Node, and on every Node named in FLASH_TEST_NODES (paths, `:`-separated; CI passes the
// Node the images ship).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, ROOT } from "../process.js";

const TIMEOUT = 180_000;
const nodes = [process.execPath, ...(process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean)];

/** A handler that fails, with a string constant a leaked source text would show. */
const FAILING_TS = [
  'import { handler } from "flash-worker";',
  'const SECRET_CONSTANT = "do-not-leak-this-constant";',
  "export default handler<{ n: number }>((job) => {",
  '  if (job.input.n < 0) throw new RangeError("negative: " + job.input.n + " (" + SECRET_CONSTANT.length + ")");',
  "  return { ts: job.input.n * 2 };",
  "});",
  "",
].join("\n");

describe(
  "the packed package, installed",
  () => {
    let dir = "";
    let installLog = "";

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "flash-pkg-"));
      // As the README's Start a project says: the tarball kept in the project's vendor/.
      mkdirSync(join(dir, "vendor"));
      const out = execFileSync(
        "npm",
        ["pack", "--json", "--ignore-scripts", "--pack-destination", join(dir, "vendor")],
        {
          cwd: ROOT,
          encoding: "utf8",
          stdio: ["ignore", "pipe", "ignore"],
        },
      );
      const [{ filename }] = JSON.parse(out) as [{ filename: string }];
      // A user's project as npm makes it: `npm init -y` writes "type": "commonjs".
      execFileSync("npm", ["init", "-y"], { cwd: dir, stdio: "ignore" });
      // As the README's Start a project says: the dependencies' install scripts are not needed.
      const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
      manifest.allowScripts = { esbuild: false, koffi: false };
      writeFileSync(join(dir, "package.json"), JSON.stringify(manifest, null, 2));
      const installed = spawnSync(
        "npm",
        ["install", "--no-audit", "--no-fund", "--prefer-offline", `./vendor/${filename}`],
        { cwd: dir, encoding: "utf8" },
      );
      installLog = installed.stdout + installed.stderr;
      expect(installed.status, installLog).toBe(0);
      writeFileSync(join(dir, "handler.ts"), FAILING_TS);
      writeFileSync(
        join(dir, "handler.js"),
        [
          'const { handler } = require("flash-worker");',
          "module.exports = handler((job) => ({ cjs: job.input.n + 1 }));",
          "",
        ].join("\n"),
      );
      writeFileSync(
        join(dir, "handler.mjs"),
        'import { handler } from "flash-worker";\nexport default handler((job) => ({ js: job.input.n + 1 }));\n',
      );
      // An ES module app: its own package.json says so; flash-worker resolves from the project above.
      mkdirSync(join(dir, "esm"));
      writeFileSync(join(dir, "esm", "package.json"), JSON.stringify({ name: "esm-app", type: "module" }));
      writeFileSync(join(dir, "esm", "handler.ts"), FAILING_TS);
      writeFileSync(
        join(dir, "exports.mjs"),
        [
          'import * as main from "flash-worker";',
          'import * as client from "flash-worker/client";',
          'import * as testing from "flash-worker/testing";',
          'import * as gpu from "flash-worker/gpu";',
          'import * as files from "flash-worker/files";',
          "const { result } = await testing.runJob(main.handler((job) => job.input), { ok: true });",
          "const types = { main: typeof main.Endpoint, client: typeof client.endpoint, gpu: typeof gpu.Cuda };",
          "console.log(JSON.stringify({ ...types, files: typeof files.upload, result }));",
          "",
        ].join("\n"),
      );
    }, TIMEOUT);

    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("npm init -y writes a CommonJS project, and installing the package into it warns of nothing", () => {
      expect(JSON.parse(readFileSync(join(dir, "package.json"), "utf8"))).toMatchObject({
        type: "commonjs",
      });
      expect(installLog).not.toMatch(/EBADENGINE|install-scripts/);
    });

    it("the image's `npm ci --omit=dev` installs it from what the README's Dockerfile copies", () => {
      expect(JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).dependencies).toEqual({
        "flash-worker": expect.stringMatching(/^file:vendor\/flash-worker-[\d.]+\.tgz$/),
      });
      // COPY package.json package-lock.json ./ and COPY vendor ./vendor, then RUN npm ci --omit=dev.
      const context = mkdtempSync(join(tmpdir(), "flash-ctx-"));
      try {
        for (const file of ["package.json", "package-lock.json"])
          cpSync(join(dir, file), join(context, file));
        cpSync(join(dir, "vendor"), join(context, "vendor"), { recursive: true });
        const ci = spawnSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund", "--prefer-offline"], {
          cwd: context,
          encoding: "utf8",
        });
        expect(ci.status, ci.stdout + ci.stderr).toBe(0);
        expect(existsSync(join(context, "node_modules", "flash-worker", "dist", "index.js"))).toBe(true);
      } finally {
        rmSync(context, { recursive: true, force: true });
      }
    });

    const run = (node: string, args: string[], cwd = dir) =>
      spawnSync(node, args, { cwd, encoding: "utf8", env: { PATH: process.env.PATH, HOME: dir } });
    const flashJs = () => join(dir, "node_modules", "flash-worker", "dist", "cli", "main.js");

    for (const node of nodes) {
      const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();

      it(`node ${version}: \`node handler.js\` (require) and \`node handler.mjs\` answer their test input`, () => {
        const cjs = run(node, ["handler.js", "--test_input", '{"input": {"n": 1}}']);
        expect(cjs.status, cjs.stderr).toBe(0);
        expect(cjs.stdout + cjs.stderr).toContain('{"output":{"cjs":2}}');
        const js = run(node, ["handler.mjs", "--test_input", '{"input": {"n": 1}}']);
        expect(js.status, js.stderr).toBe(0);
        expect(js.stdout + js.stderr).toContain('{"output":{"js":2}}');
      });

      for (const app of ["CommonJS", "ES module"] as const) {
        const cwd = () => (app === "CommonJS" ? dir : join(dir, "esm"));

        it(`node ${version}, ${app} app: \`flash run handler.ts\` answers, and a throw's frames name the file, not its source`, () => {
          const ok = run(
            node,
            [flashJs(), "run", "handler.ts", "--test-input", '{"input": {"n": 4}}'],
            cwd(),
          );
          expect(ok.status, ok.stderr).toBe(0);
          expect(ok.stdout + ok.stderr).toContain('{"output":{"ts":8}}');
          expect(ok.stderr).not.toMatch(/Warning/);
          const bad = run(
            node,
            [flashJs(), "run", "handler.ts", "--test-input", '{"input": {"n": -1}}'],
            cwd(),
          );
          const out = bad.stdout + bad.stderr;
          expect(bad.status, out).toBe(1);
          expect(out).toContain("negative: -1 (25)");
          expect(out).toMatch(/at .*handler\.ts:4:\d+/);
          expect(out).not.toContain("data:");
          expect(out).not.toContain("do-not-leak-this-constant");
          // Frames in the package cite files it ships.
          expect(out).not.toMatch(/node_modules\/flash-worker\/src\//);
        });

        it(`node ${version}, ${app} app: a worker behind /runsync returns a traceback without source text`, async () => {
          const port = await freePort();
          const child = spawn(
            node,
            [
              flashJs(),
              "start",
              "handler.ts",
              "--rp_serve_api",
              "--rp_api_port",
              String(port),
              "--api-key",
              "k",
            ],
            { cwd: cwd(), env: { PATH: process.env.PATH, HOME: dir }, stdio: ["ignore", "pipe", "pipe"] },
          );
          let output = "";
          const ready = new Promise<void>((resolve, reject) => {
            const seen = (chunk: Buffer) => {
              output += chunk.toString();
              if (output.includes("Ready. Try: curl")) resolve();
            };
            child.stdout.on("data", seen);
            child.stderr.on("data", seen);
            child.on("exit", () => reject(new Error(`worker exited:\n${output}`)));
          });
          const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
          try {
            await ready;
            const answer = await fetch(`http://127.0.0.1:${port}/v2/local/runsync`, {
              method: "POST",
              headers: { Authorization: "Bearer k", "Content-Type": "application/json" },
              body: JSON.stringify({ input: { n: -2 } }),
            });
            const body = (await answer.json()) as { status: string; error: string };
            expect(body.status).toBe("FAILED");
            const error = JSON.parse(body.error) as { error_message: string; error_traceback: string };
            expect(error.error_message).toBe("negative: -2 (25)");
            expect(error.error_traceback).toMatch(/at .*handler\.ts:4:\d+/);
            expect(error.error_traceback).not.toContain("data:");
            expect(error.error_traceback.length).toBeLessThan(3000);
          } finally {
            child.kill("SIGTERM");
            await exited;
          }
        });
      }

      it(`node ${version}: every export loads from the installed package`, () => {
        const out = run(node, ["exports.mjs"]);
        expect(out.status, out.stderr).toBe(0);
        expect(JSON.parse(out.stdout)).toEqual({
          main: "function",
          client: "function",
          gpu: "function",
          files: "function",
          result: { output: { ok: true } },
        });
      });
    }
  },
  TIMEOUT,
);
