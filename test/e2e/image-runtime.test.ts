// The runtime as docker/install.sh installs it in the images: `npm ci --omit=dev` from the lock beside dist/, then,
// on a Node that transforms TypeScript itself, tsx and esbuild removed. What a worker needs must be there: a .ts
// handler with an enum (which type stripping alone refuses) and `./x.js` naming x.ts run through Node's own
// transform on Node 24 (a Node without it says what to do), and tracing sends its spans although the OpenTelemetry
// SDK's packages are devDependencies (dist/trace/sdk.js bundles them). Node 24 comes from FLASH_TEST_NODES.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RecordingPlatform } from "../conformance/recording-platform.js";
import { flash, ROOT } from "../process.js";
import { OtlpReceiver } from "../trace/receiver.js";

const nodes = [process.execPath, ...(process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean)];
/** What install.sh removes from the image on such a Node: the TypeScript compilers and what only they need. */
const COMPILERS = [
  "tsx",
  "esbuild",
  "@esbuild",
  "get-tsconfig",
  "resolve-pkg-maps",
  ".bin/tsx",
  ".bin/esbuild",
];

const canTransform = (node: string) =>
  spawnSync(
    node,
    [
      "-p",
      'const m = require("node:module"); typeof m.registerHooks === "function" && typeof m.stripTypeScriptTypes === "function"',
    ],
    { encoding: "utf8" },
  ).stdout.trim() === "true";

describe("the runtime as the images install it (production dependencies, no compilers)", () => {
  let dir = "";
  let pkg = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "flash-image-runtime-"));
    pkg = join(dir, "node_modules", "flash-worker");
    mkdirSync(pkg, { recursive: true });
    cpSync(join(ROOT, "dist"), join(pkg, "dist"), { recursive: true });
    for (const file of ["package.json", "package-lock.json"]) cpSync(join(ROOT, file), join(pkg, file));
    const installed = spawnSync(
      "npm",
      [
        "ci",
        "--omit=dev",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--prefer-offline",
        "--loglevel=warn",
      ],
      { cwd: pkg, encoding: "utf8" },
    );
    expect(installed.status, installed.stderr).toBe(0);
    for (const name of COMPILERS) rmSync(join(pkg, "node_modules", name), { recursive: true, force: true });
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
    // What `npm init -y` makes: a "commonjs" package whose TypeScript imports, extensionless as tsc's users write.
    const cjs = join(dir, "cjs-app");
    mkdirSync(join(cjs, "lib"), { recursive: true });
    writeFileSync(join(cjs, "package.json"), JSON.stringify({ name: "cjs-app", type: "commonjs" }));
    writeFileSync(
      join(cjs, "greet.service.ts"),
      'export const greet = (name: string): string => "hi " + name;\n',
    );
    writeFileSync(join(cjs, "lib", "index.ts"), 'export enum Mood { Glad = "glad" }\n');
    writeFileSync(join(cjs, "legacy.ts"), "module.exports = { legacy: (n: number): number => n + 1 };\n");
    writeFileSync(
      join(cjs, "handler.ts"),
      [
        'import { handler } from "flash-worker";',
        'import { greet } from "./greet.service";',
        'import { Mood } from "./lib";',
        'import legacy from "./legacy";',
        'import { basename } from "node:path";',
        "export default handler<{ name: string }>((job) => {",
        '  if (!job.input.name) throw new RangeError("no name");',
        '  const os: typeof import("node:os") = require("node:os");',
        '  const where = basename(__dirname) + "/" + basename(__filename);',
        "  return { text: greet(job.input.name), mood: Mood.Glad, next: legacy.legacy(1), where, os: os.platform() };",
        "});",
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(app, "traced.mjs"),
      'import { handler } from "flash-worker";\nexport default handler(() => ({ traced: true }));\n',
    );
  }, 180_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("has neither the compilers nor the OpenTelemetry SDK's packages, only @opentelemetry/api", () => {
    const installed = (name: string) => existsSync(join(pkg, "node_modules", name, "package.json"));
    const absent = ["tsx", "esbuild", "@opentelemetry/sdk-trace-node", "@opentelemetry/resources"];
    expect(absent.filter(installed)).toEqual([]);
    expect(installed("@opentelemetry/api")).toBe(true);
  });

  const start = (node: string, input: unknown, app = "app") =>
    spawnSync(
      node,
      [join(pkg, "dist/cli/main.js"), "start", "handler.ts", "--test_input", JSON.stringify(input)],
      {
        cwd: join(dir, app),
        encoding: "utf8",
        env: { PATH: process.env.PATH ?? "", HOME: dir },
        timeout: 60_000,
      },
    );

  for (const node of nodes) {
    const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
    if (canTransform(node)) {
      it(`Node ${version}: a .ts handler with an enum runs through Node's own transform, stack lines in handler.ts, no warning`, () => {
        const ok = start(node, { input: { big: true } });
        expect(ok.stdout + ok.stderr).toContain('{"output":{"color":"green","size":10}}');
        expect(ok.status, ok.stderr).toBe(0);
        expect(ok.stderr).not.toContain("ExperimentalWarning");
        const failed = start(node, { input: {} });
        expect(failed.stdout + failed.stderr).toContain("RangeError: no size");
        expect(failed.stdout + failed.stderr).toMatch(/handler\.ts:5:\d+/);
      });
      it(`Node ${version}: a "commonjs" package's .ts handler that imports (npm init -y) runs as a module with require and __dirname, extensionless imports found`, () => {
        const ok = start(node, { input: { name: "ada" } }, "cjs-app");
        expect(ok.stdout + ok.stderr).toContain(
          '{"output":{"text":"hi ada","mood":"glad","next":2,"where":"cjs-app/handler.ts","os":"linux"}}',
        );
        expect(ok.status, ok.stderr).toBe(0);
        expect(ok.stderr).not.toContain("Warning");
        const failed = start(node, { input: {} }, "cjs-app");
        expect(failed.stdout + failed.stderr).toContain("RangeError: no name");
        expect(failed.stdout + failed.stderr).toMatch(/handler\.ts:7:\d+/);
      });
    } else {
      it(`Node ${version}: no loader for that handler here, and the message says what to do`, () => {
        const run = start(node, { input: { big: true } });
        expect(run.status).not.toBe(0);
        expect(run.stdout + run.stderr).toContain(
          `handler.ts needs a TypeScript loader: Node ${version} cannot run it itself and tsx is not installed (run it on Node 24, as the images do, or npm install tsx)`,
        );
      });
    }
  }

  it("a traced queue worker sends its job span (the SDK from dist/trace/sdk.js)", async () => {
    const platform = await new RecordingPlatform().start();
    const receiver = await new OtlpReceiver().start();
    try {
      const worker = flash(
        ["start", "traced.mjs"],
        { ...platform.env(), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: "60000" },
        join(dir, "app"),
        join(pkg, "dist/cli/main.js"),
      );
      platform.push({ id: "job-traced", input: {} });
      await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
      worker.child.kill("SIGTERM");
      expect(await worker.exited, worker.stderr.join("\n")).toBe(0);
      const job = receiver.spans.find((s) => s.name === "job");
      expect(job?.attributes["flash.job.id"]).toBe("job-traced");
    } finally {
      await receiver.close();
      await platform.close();
    }
  });
});
