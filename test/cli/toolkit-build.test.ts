// flash build: what ships, the manifest, and each of the interface document's build messages.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, relative } from "node:path";
import { list } from "tar";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { scanImports } from "../../src/toolkit/bundle/imports.js";
import { BuildError, buildArtifact } from "../../src/toolkit/bundle/index.js";
import { targetNodeVersion } from "../../src/toolkit/bundle/node-version.js";
import { buildAndPush } from "../../src/toolkit/image/build.js";
import { flashRun } from "../process.js";
import { GREETER, makeProject, type Project, vendorPackage } from "./toolkit-project.js";

let project: Project | undefined;
afterEach(() => {
  project?.remove();
  project = undefined;
});

async function entries(artifact: string): Promise<string[]> {
  const names: string[] = [];
  await list({ file: artifact, onReadEntry: (entry) => names.push(entry.path) });
  return names.sort();
}

const buildError = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error("the build succeeded");
    },
    (err: unknown) => {
      expect(err).toBeInstanceOf(BuildError);
      return (err as Error).message;
    },
  );

describe("scanImports", () => {
  it("finds static, side-effect, re-export, dynamic and require specifiers; skips type-only imports and comments", () => {
    const source = [
      'import a from "./a.js";',
      "import {",
      "  b,",
      "  type C,",
      "} from './b';",
      'import "./side-effect.js";',
      'export * from "./re-export.js";',
      'export { d } from "./d.js"',
      'import type { T } from "./types-only.js";',
      "export type Shape = { from: string };",
      'const e = await import("./dynamic.js");',
      'const f = require("./required.cjs");',
      '// import x from "./commented.js";',
      '/* export * from "./block.js" */',
      'const url = "http://example.com/x"; import g from "pkg";',
    ].join("\n");
    expect(scanImports(source)).toEqual([
      "./a.js",
      "./b",
      "./re-export.js",
      "./d.js",
      "pkg",
      "./side-effect.js",
      "./dynamic.js",
      "./required.cjs",
    ]);
  });
});

describe("flash build", () => {
  it("ships the sources (not ignored ones) and a manifest of the endpoints in .flash/artifact.tar.gz", async () => {
    project = makeProject({
      ...GREETER,
      "README.md": "# app\n",
      "NOTES.md": "not shipped\n",
      "docs/guide.txt": "not shipped\n",
      "test/handler.test.ts": "not shipped\n",
      ".env": "RUNPOD_API_KEY=secret\n",
      ".gitignore": "data/\n*.bin\n!keep.bin\n",
      "data/big.csv": "1,2,3\n",
      "weights.bin": "x",
      "keep.bin": "y",
    });
    const result = await buildArtifact({ root: project.dir, entries: ["handler.ts"] });
    expect(result.artifact).toBe(join(project.dir, ".flash", "artifact.tar.gz"));
    expect(await entries(result.artifact)).toEqual([
      "README.md",
      "flash_manifest.json",
      "handler.ts",
      "keep.bin",
      "lib/greet.ts",
      expect.stringMatching(/^openapi\/flash-app-.+\.json$/),
      "package.json",
    ]);
    const head = readFileSync(result.artifact).subarray(0, 2);
    expect([...head]).toEqual([31, 139]);
    expect(result.manifest).toMatchObject({
      version: "1.0",
      files: 5,
      // The images' Node.js, whatever runs the build.
      nodeVersion: "24",
      endpoints: [
        {
          name: expect.stringMatching(/^flash-app-/),
          file: "handler.ts",
          kind: "queue",
          routes: [],
          workers: [0, 1],
          executionTimeoutMs: 0,
        },
      ],
    });
    expect(JSON.parse(readFileSync(join(project.dir, ".flash", "flash_manifest.json"), "utf8"))).toEqual(
      result.manifest,
    );
  });

  it("an Endpoint's name, kind, routes, workers and timeouts go into the manifest", async () => {
    project = makeProject({
      "api.ts": [
        'import { Endpoint } from "flash-worker";',
        'const api = new Endpoint({ name: "My API", workers: [1, 3], executionTimeoutMs: 30000, nodeVersion: 22 });',
        'api.post("/generate", (body) => body);',
        'api.get("/items/:id", (args) => args);',
        "export default api;",
      ].join("\n"),
      "queue.ts": [
        'import { Endpoint } from "flash-worker";',
        'const ep = new Endpoint({ name: "jobs", workers: 2, maxConcurrency: 4 });',
        "export default ep.handler(async (job) => job.input);",
      ].join("\n"),
    });
    const { manifest } = await buildArtifact({
      root: project.dir,
      entries: ["api.ts", "queue.ts"],
      nodeVersion: "22",
    });
    expect(manifest.nodeVersion).toBe("22");
    expect(manifest.endpoints).toEqual([
      expect.objectContaining({
        name: "My API",
        id: "my-api",
        file: "api.ts",
        kind: "load-balanced",
        routes: [
          { method: "POST", path: "/generate" },
          { method: "GET", path: "/items/:id" },
        ],
        workers: [1, 3],
        executionTimeoutMs: 30000,
        nodeVersion: "22",
      }),
      expect.objectContaining({
        name: "jobs",
        kind: "queue",
        routes: [],
        workers: [0, 2],
        maxConcurrency: 4,
      }),
    ]);
    // Each endpoint's OpenAPI document ships beside the manifest, where its entry says.
    expect(manifest.endpoints.map((e) => e.openapi)).toEqual(["openapi/my-api.json", "openapi/jobs.json"]);
    const document = JSON.parse(readFileSync(join(project.dir, ".flash", "openapi", "my-api.json"), "utf8"));
    expect(document).toMatchObject({ openapi: "3.1.0", info: { title: "My API" } });
    expect(Object.keys(document.paths)).toEqual(["/generate", "/items/{id}"]);
    const queue = JSON.parse(readFileSync(join(project.dir, ".flash", "openapi", "jobs.json"), "utf8"));
    expect(queue.components.schemas.Input).toEqual({});
  });

  it("Relative import could not be resolved to a local file", async () => {
    project = makeProject({
      "handler.ts":
        'import { handler } from "flash-worker";\nimport { x } from "./missing.js";\nexport default handler(() => x);\n',
      "lib/util.ts": 'export { y } from "../../outside.js";\n',
    });
    const message = await buildError(buildArtifact({ root: project.dir, entries: ["handler.ts"] }));
    expect(message).toBe(
      [
        "Relative import could not be resolved to a local file:",
        '  handler.ts imports "./missing.js"',
        '  lib/util.ts imports "../../outside.js"',
        "Fix the import, or move the module under the project root.",
      ].join("\n"),
    );
  });

  it("shipped code importing an ignored file: lists the excluded files and their importers", async () => {
    project = makeProject({
      ...GREETER,
      "handler.ts": `import "./secrets/config.js";\nimport "./tests/fixture.js";\n${GREETER["handler.ts"]}`,
      "lib/greet.ts": `import "../secrets/config.js";\n${GREETER["lib/greet.ts"]}`,
      ".gitignore": "secrets/\n",
      "secrets/config.ts": "export const key = 1;\n",
      "tests/fixture.ts": "export {};\n",
    });
    const message = await buildError(buildArtifact({ root: project.dir, entries: ["handler.ts"] }));
    expect(message).toBe(
      [
        "Shipped code imports local modules that the build ignore rules (.gitignore, .flashignore or built-in defaults) exclude:",
        "  secrets/config.ts (imported by handler.ts, lib/greet.ts)",
        "  tests/fixture.ts (imported by handler.ts)",
        "Shipping them would silently override a deliberate exclusion, and omitting them would break the worker with ERR_MODULE_NOT_FOUND. Remove the matching ignore pattern or stop importing these modules from shipped code.",
      ].join("\n"),
    );
  });

  it("an archive over the limit is refused with its actual size and the maximum, and removed", async () => {
    project = makeProject({ ...GREETER, "blob.txt": randomBytes(32 * 1024).toString("hex") });
    const message = await buildError(
      buildArtifact({ root: project.dir, entries: ["handler.ts"], maxBytes: 1000 }),
    );
    expect(message).toMatch(
      /^Archive exceeds the maximum size: \d+\.\d KB \(\d+ bytes\), the maximum is 1000 B \(1000 bytes\)\. Exclude large files/,
    );
    const artifact = join(project.dir, ".flash", "artifact.tar.gz");
    expect(() => readFileSync(artifact)).toThrow(/ENOENT/);
  });

  it("the default maximum is 1.5 GB", async () => {
    const { MAX_ARTIFACT_BYTES } = await import("../../src/toolkit/bundle/index.js");
    expect(MAX_ARTIFACT_BYTES).toBe(1500 * 1024 * 1024);
  });
});

describe("the app's npm dependencies", () => {
  const logged = () => {
    const lines: string[] = [];
    const log = createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } });
    return { lines, log };
  };

  it("package.json dependencies and an Endpoint's are installed with npm and ship as node_modules/; flash-worker and devDependencies do not", async () => {
    project = makeProject({
      "handler.ts": [
        'import { Endpoint } from "flash-worker";',
        'import { shout } from "shout";',
        'const api = new Endpoint({ name: "loud", dependencies: ["whisper@file:vendor/whisper-1.0.0.tgz"] });',
        "export default api.handler(async (job) => shout(String(job.input)));",
      ].join("\n"),
    });
    const shout = await vendorPackage(
      project,
      "shout",
      "export const shout = (s) => s.toUpperCase() + '!';\n",
    );
    await vendorPackage(project, "whisper", "export const whisper = (s) => s.toLowerCase();\n");
    await vendorPackage(project, "devonly", "export {};\n");
    project.write(
      "package.json",
      JSON.stringify({
        name: "app",
        type: "module",
        dependencies: { "flash-worker": "*", shout },
        devDependencies: { devonly: "file:vendor/devonly-1.0.0.tgz" },
      }),
    );
    const { lines, log } = logged();
    const result = await buildArtifact({ root: project.dir, entries: ["handler.ts"], log });
    const names = await entries(result.artifact);
    expect(names).toEqual(
      expect.arrayContaining([
        "handler.ts",
        "package.json",
        "node_modules/shout/package.json",
        "node_modules/shout/index.js",
        "node_modules/whisper/index.js",
      ]),
    );
    expect(names.filter((n) => n.startsWith("node_modules/flash-worker") || n.includes("devonly"))).toEqual(
      [],
    );
    // the vendored tarballs themselves are ignored (*.tgz): only the installed packages ship
    expect(names.filter((n) => n.startsWith("vendor/"))).toEqual([]);
    expect(result.manifest.dependencies).toEqual([
      `shout@file:${join(project.dir, "vendor/shout-1.0.0.tgz")}`,
      `whisper@file:${join(project.dir, "vendor/whisper-1.0.0.tgz")}`,
    ]);
    const text = lines.join("");
    expect(text).toContain("Installing dependencies for linux-x64: [shout, whisper]");
    expect(text).toMatch(/Installed 2 dependencies in \d+\.\ds/);
  });

  it("nothing to install: no node_modules, and the log says so", async () => {
    project = makeProject(GREETER);
    const { lines, log } = logged();
    const result = await buildArtifact({ root: project.dir, entries: ["handler.ts"], log });
    expect((await entries(result.artifact)).some((n) => n.startsWith("node_modules/"))).toBe(false);
    expect(result.manifest.dependencies).toEqual([]);
    expect(lines.join("")).toContain("No dependencies to install");
  });

  it("a failed install stops the build with npm's own words; a missing npm is named", async () => {
    project = makeProject(GREETER);
    project.write(
      "package.json",
      JSON.stringify({ name: "app", dependencies: { ghost: "file:vendor/ghost-9.9.9.tgz" } }),
    );
    const message = await buildError(buildArtifact({ root: project.dir, entries: ["handler.ts"] }));
    expect(message).toMatch(/^Failed to install dependencies \(npm install --omit=dev/);
    expect(message).toMatch(/ghost-9\.9\.9\.tgz|ENOENT/);
    const missing = await buildError(
      buildArtifact({ root: project.dir, entries: ["handler.ts"], npm: "/nonexistent/npm" }),
    );
    expect(missing).toBe("Could not run /nonexistent/npm to install the app's dependencies: ENOENT");
  });

  it("package.json dependencies that are not an object are a build error", async () => {
    project = makeProject(GREETER);
    project.write("package.json", JSON.stringify({ dependencies: ["zod"] }));
    expect(await buildError(buildArtifact({ root: project.dir, entries: ["handler.ts"] }))).toBe(
      "package.json: dependencies must be an object of package names to versions",
    );
  });
});

describe("Node.js version", () => {
  const none = new Map<string, "20" | "22" | "24">();

  it("--node-version outside the supported list: the message lists the versions", () => {
    expect(() => targetNodeVersion("18", none)).toThrow(
      "Node.js 18 is not supported. Supported versions: 20, 22, 24",
    );
    expect(targetNodeVersion("v24.1.0", none, "18.0.0")).toBe("24");
  });

  it("an unsupported local Node.js is refused unless --node-version says what to build for", () => {
    expect(() => targetNodeVersion(undefined, none, "18.19.0")).toThrow(
      "Local Node.js 18.19.0 is not supported. Supported versions: 20, 22, 24. Use --node-version <version>, set nodeVersion on the Endpoint, or switch to a supported Node.js.",
    );
    expect(targetNodeVersion(undefined, none, "22.3.0")).toBe("24");
  });

  it("endpoints declaring different versions must agree", () => {
    const declared = new Map<string, "20" | "22" | "24">([
      ["a", "20"],
      ["b", "22"],
    ]);
    expect(() => targetNodeVersion(undefined, declared, "20.0.0")).toThrow(
      "An app runs one Node.js version across its endpoints (found a=20, b=22). Set nodeVersion to the same value on every Endpoint, or pass --node-version.",
    );
    expect(targetNodeVersion("24", declared, "20.0.0")).toBe("24");
  });

  it("flash build --node-version 18 fails with the message on stderr", async () => {
    project = makeProject(GREETER);
    const { code, stderr } = await flashRun(["build", "--node-version", "18"], {}, project.dir);
    expect(code).toBe(1);
    expect(stderr).toContain("✗ Node.js 18 is not supported. Supported versions: 20, 22, 24");
  });

  it("flash build prints what it built; the progress lines honour LOG_LEVEL", async () => {
    project = makeProject(GREETER);
    const built = await flashRun(["build"], { LOG_LEVEL: "INFO" }, project.dir);
    expect(built.code).toBe(0);
    expect(built.stdout).toMatch(
      /^✓ built flash-app-\S+ {2}3 files, 1 endpoint\(s\), [\d.]+ K?B, Node\.js \d+$/m,
    );
    expect(built.stdout).toContain("Archive: .flash/artifact.tar.gz");
    expect(built.stderr).toMatch(/\| INFO \| build \| Archiving 3 files into \.flash\/artifact\.tar\.gz$/m);
    const quiet = await flashRun(["build"], { LOG_LEVEL: "ERROR" }, project.dir);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
  });
});

describe("flash build, as the interface document's error table has it", () => {
  it("a handler() app builds for the images' Node.js 24, whatever Node.js runs the build", async () => {
    project = makeProject(GREETER);
    const { code, stdout } = await flashRun(["build"], {}, project.dir);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^✓ built flash-app-\S+ {2}3 files, 1 endpoint\(s\), [\d.]+ K?B, Node\.js 24$/m);
    const manifest = JSON.parse(readFileSync(join(project.dir, ".flash", "flash_manifest.json"), "utf8"));
    expect(manifest.nodeVersion).toBe("24");
  });

  it(".flashignore's patterns do not ship (nor the file itself); `!` lines re-include", async () => {
    project = makeProject({
      ...GREETER,
      ".flashignore": "# kept in git, not needed by workers\nfixtures/\n*.bin\n!keep.bin\n",
      "fixtures/sample.json": "{}\n",
      "weights.bin": "x",
      "keep.bin": "y",
    });
    const { code, stdout } = await flashRun(["build"], {}, project.dir);
    expect(code).toBe(0);
    expect(stdout).toContain("4 files");
    expect(await entries(join(project.dir, ".flash", "artifact.tar.gz"))).toEqual([
      "flash_manifest.json",
      "handler.ts",
      "keep.bin",
      "lib/greet.ts",
      expect.stringMatching(/^openapi\/flash-app-.+\.json$/),
      "package.json",
    ]);
    project.write(".flashignore", "lib/\n");
    const refused = await flashRun(["build"], {}, project.dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      "✗ Shipped code imports local modules that the build ignore rules (.gitignore, .flashignore or built-in defaults) exclude:",
    );
    expect(refused.stderr).toContain("  lib/greet.ts (imported by handler.ts)");
  });

  const endpointFile = (routes: string) =>
    [
      'import { Endpoint } from "flash-worker";',
      'const api = new Endpoint({ name: "api" });',
      routes,
      "export default api;",
      "",
    ].join("\n");

  it("configuration errors print as one ✗ line naming the file and line, without a stack", async () => {
    const cases: [string, string][] = [
      [
        'api.route("FETCH" as never, "/a", () => 1);',
        "✗ handler.ts:3: method must be one of GET, POST, PUT, DELETE, PATCH, got: FETCH",
      ],
      ['api.get("a", () => 1);', "✗ handler.ts:3: path must start with '/', got: a"],
      [
        'api.get("/a", () => 1);\napi.get("/a", () => 2);',
        "✗ handler.ts:4: duplicate route: GET /a on endpoint 'api'",
      ],
      [
        'import "not-installed-pkg";\napi.get("/a", () => 1);',
        "✗ handler.ts: Cannot find package 'not-installed-pkg' imported from",
      ],
    ];
    for (const [routes, message] of cases) {
      project = makeProject({ "handler.ts": endpointFile(routes) });
      const { code, stderr } = await flashRun(["build"], { LOG_LEVEL: "ERROR" }, project.dir);
      expect(code).toBe(1);
      expect(stderr).toContain(message);
      // One line: no "Failed to load", no repeated error name, no stack frames.
      expect(stderr.trim().split("\n")).toHaveLength(1);
      expect(stderr).not.toContain("failed to load");
      project.remove();
      project = undefined;
    }
  });

  it("an artifact that is not gzip is refused before the image step reads it, with the fix", async () => {
    project = makeProject(GREETER);
    const built = await buildArtifact({ root: project.dir, entries: ["handler.ts"] });
    writeFileSync(built.artifact, "<html>502 Bad Gateway</html>");
    const refused = buildAndPush({
      // Never run: the artifact is refused first.
      tool: { name: "buildah", prefix: ["buildah"] },
      root: project.dir,
      artifact: built.artifact,
      image: "127.0.0.1:5000/app:1",
      entry: "handler.ts",
      kind: "cpu",
      log: createLogger({ level: "SILENT", json: false }),
    });
    expect(await buildError(refused)).toBe(
      "File is not a valid gzip file. Expected magic bytes (31, 139), got: (60, 104). .flash/artifact.tar.gz is damaged: delete the .flash directory and rebuild (flash build).",
    );
  });
});

/** Every entry of an artifact: its type, its link target for a link, its content for a file. */
async function archived(
  artifact: string,
): Promise<Map<string, { type: string; link?: string; text: string }>> {
  const found = new Map<string, { type: string; link?: string; text: string }>();
  await list({
    file: artifact,
    onReadEntry: (entry) => {
      const chunks: Buffer[] = [];
      entry.on("data", (chunk: Buffer) => chunks.push(chunk));
      entry.on("end", () =>
        found.set(entry.path, {
          type: entry.type,
          link: entry.linkpath || undefined,
          text: Buffer.concat(chunks).toString(),
        }),
      );
    },
  });
  return found;
}

/** The well-known credential files, each holding the marker (docs/toolkit.md §8.1 lists them). */
const CREDENTIALS = [
  ".npmrc",
  ".yarnrc.yml",
  ".pypirc",
  ".netrc",
  ".git-credentials",
  ".aws/credentials",
  ".ssh/id_rsa",
  "id_rsa",
  "id_dsa",
  "id_ecdsa",
  "id_ed25519",
  ".docker/config.json",
  ".runpod/config.toml",
  ".env",
  ".env.production",
  "lib/.npmrc",
];

describe("flash build ships no link's target from outside the project, and no credential file (issue 43: 11, 12)", () => {
  let outside: string | undefined;
  afterEach(() => {
    if (outside) rmSync(outside, { recursive: true, force: true });
    outside = undefined;
  });

  const marker = `flash-secret-${process.pid}`;

  it("11: a link within the project ships as a link; one out of it, dangling, or to what does not ship is left out; the summary lists both", async () => {
    outside = mkdtempSync(join(tmpdir(), "flash-outside-"));
    writeFileSync(join(outside, "secret.txt"), `${marker}\n`);
    mkdirSync(join(outside, "keys"));
    writeFileSync(join(outside, "keys", "id"), `${marker}\n`);
    project = makeProject({ ...GREETER, "common/words.json": '["shared"]\n' });
    const at = (path: string) => join(project!.dir, path);
    const secret = join(outside, "secret.txt");
    symlinkSync(secret, at("leak.txt"));
    symlinkSync(relative(project.dir, secret), at("leak-relative.txt"));
    symlinkSync(join(outside, "keys"), at("keys"), "dir");
    symlinkSync(join(outside, "missing"), at("models"), "dir");
    symlinkSync("common", at("shared"), "dir");
    symlinkSync(at("common/words.json"), at("words.json"));
    symlinkSync(`../${basename(project.dir)}/common/words.json`, at("back.json"));
    symlinkSync(".env", at("settings.env"));
    project.write(".env", `RUNPOD_API_KEY=${marker}\n`);

    const { code, stdout, stderr } = await flashRun(["build"], { LOG_LEVEL: "ERROR" }, project.dir);
    expect(code, stderr).toBe(0);
    const entries = await archived(join(project.dir, ".flash", "artifact.tar.gz"));
    for (const [path, entry] of entries) expect(entry.text, path).not.toContain(marker);
    expect(entries.get("common/words.json")?.type).toBe("File");
    const links = [...entries].filter(([, entry]) => entry.type === "SymbolicLink");
    // Each relative and inside: what extractors (node-tar, Python's tarfile data filter) accept.
    expect(Object.fromEntries(links.map(([path, entry]) => [path, entry.link]))).toEqual({
      shared: "common",
      "words.json": "common/words.json",
      "back.json": "common/words.json",
    });
    expect(stdout).toContain(
      "  Shipped as links: back.json → common/words.json, shared → common, words.json → common/words.json\n",
    );
    expect(stdout).toContain(
      [
        "  Links left out, not followed: ",
        `keys → ${join(outside, "keys")} (outside the project), `,
        `leak-relative.txt → ${relative(project.dir, secret)} (outside the project), `,
        `leak.txt → ${secret} (outside the project), `,
        `models → ${join(outside, "missing")} (not found), `,
        "settings.env → .env (its target is not shipped)\n",
      ].join(""),
    );
  });

  it("12: the well-known credential files stay home, look-alikes ship; the summary lists what was left out", async () => {
    project = makeProject({
      ...GREETER,
      ...Object.fromEntries(CREDENTIALS.map((path) => [path, `token=${marker}\n`])),
      // Look like credentials, and are not: a template, a public key, a CA certificate.
      ".env.example": "RUNPOD_API_KEY=\n",
      "id_rsa.pub": "ssh-ed25519 AAAA public\n",
      "certs/ca.pem": "-----BEGIN CERTIFICATE-----\n",
    });
    const { code, stdout, stderr } = await flashRun(["build"], { LOG_LEVEL: "ERROR" }, project.dir);
    expect(code, stderr).toBe(0);
    const entries = await archived(join(project.dir, ".flash", "artifact.tar.gz"));
    for (const [path, entry] of entries) expect(entry.text, path).not.toContain(marker);
    for (const path of CREDENTIALS) expect(entries.has(path), path).toBe(false);
    for (const path of [".env.example", "id_rsa.pub", "certs/ca.pem"]) {
      expect(entries.get(path)?.type, path).toBe("File");
    }
    expect(stdout).toContain(
      "  Left out as credentials (a !pattern in .flashignore ships one): .aws/, .docker/config.json, .env, .env.production, .git-credentials, .netrc, .npmrc, .pypirc, .runpod/, .ssh/, .yarnrc.yml, id_dsa, id_ecdsa, id_ed25519, id_rsa, lib/.npmrc\n",
    );
  });

  it("a `!pattern` in .flashignore ships a credential file after all, and the summary no longer lists it", async () => {
    project = makeProject({
      ...GREETER,
      ".npmrc": "registry=http://127.0.0.1:1/\n",
      ".flashignore": "!.npmrc\n",
    });
    const { code, stdout } = await flashRun(["build"], { LOG_LEVEL: "ERROR" }, project.dir);
    expect(code).toBe(0);
    expect(await entries(join(project.dir, ".flash", "artifact.tar.gz"))).toContain(".npmrc");
    expect(stdout).not.toContain("Left out as credentials");
  });

  it("code imports through a link to a folder of the project, which ships as a link beside its target", async () => {
    project = makeProject({
      "handler.ts": [
        'import { handler } from "flash-worker";',
        'import { greet } from "./shared/greet.js";',
        "export default handler(async (job: { input: { name: string } }) => greet(job.input.name));",
        "",
      ].join("\n"),
      "common/greet.ts": 'export const greet = (name: string): string => "hello " + name;\n',
    });
    symlinkSync("common", join(project.dir, "shared"), "dir");
    const { code, stdout, stderr } = await flashRun(["build"], { LOG_LEVEL: "ERROR" }, project.dir);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("  Shipped as links: shared → common\n");
    const entries = await archived(join(project.dir, ".flash", "artifact.tar.gz"));
    expect(entries.get("shared")).toMatchObject({ type: "SymbolicLink", link: "common" });
    expect(entries.get("common/greet.ts")?.type).toBe("File");
  });
});
