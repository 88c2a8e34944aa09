// The release, rehearsed with the scripts the tag's workflow runs (scripts/release/): what gets published checked
// (the allow-list, the size budget README.md states, how TypeScript and Node resolve the exports), the tarball
// published to a real npm registry on 127.0.0.1, then a fresh project outside the repository made by the
// README's "Start a project" commands — `npm install flash-worker` from that registry, no tarball, no vendor/ —
// whose handler answers `flash run` and, behind `flash dev`, the curl it prints. The image half of the README
// (its Dockerfile's npm ci reaching the registry, the deployed endpoint) is test/e2e/readme-project.test.ts.

import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { snippets } from "../e2e/snippets.js";
import { freePort, ROOT } from "../process.js";
import { type Rehearsal, startRehearsal } from "./rehearsal.js";

const CHECK = join(ROOT, "scripts/release/check-package.mjs");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const start = snippets("README.md").filter((s) => s.section === "Start a project");
const commands = start.find((s) => s.lang === "sh" && s.text.includes("npm init"))?.text ?? "";
const handlerTs = start.find((s) => s.lang === "ts")?.text ?? "";
const testInput = /`test_input\.json`: `([^`]+)`/.exec(readme)?.[1] ?? "";
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  version: string;
  engines: { node: string };
};

interface Summary {
  files: number;
  packedBytes: number;
  unpackedBytes: number;
  budget: { packedBytes: number; unpackedBytes: number; files: number };
  types: {
    entrypoints: string[];
    problems: { kind: string; resolution: string; entrypoint: string }[];
  };
  violations: string[];
}

const sha512 = (file: string) => `sha512-${createHash("sha512").update(readFileSync(file)).digest("base64")}`;
const tail = (r: { stdout: string; stderr: string }) => `${r.stdout}\n${r.stderr}`.slice(-4000);

describe("what gets published (scripts/release/check-package.mjs)", () => {
  it("a package with a source map, a test, a fixture, a benchmark or a source in it, or over its budget, is refused", () => {
    // A package of its own, so the rules are seen to bite: each file below breaks one.
    const dir = mkdtempSync(join(tmpdir(), "flash-pkg-rules-"));
    try {
      const files: Record<string, string> = {
        "dist/index.js": "export {};\n",
        "dist/index.js.map": "{}",
        "dist/index.d.ts": "export {};\n",
        "dist/test/helper.js": "",
        "dist/fixtures/big.js": "x".repeat(3_100_000),
        "bench/run.js": "",
        "dist/load.bench.js": "",
        "dist/toolkit/bench/index.js": "",
        "dist/index.ts": "",
        "docker/smoke/queue.sh": "",
        "README.md": "",
      };
      for (const [path, text] of Object.entries(files)) {
        mkdirSync(join(dir, path, ".."), { recursive: true });
        writeFileSync(join(dir, path), text);
      }
      writeFileSync(
        join(dir, "package.json"),
        JSON.stringify({
          name: "rules",
          version: "1.0.0",
          license: "MIT",
          type: "module",
          exports: { ".": { types: "./dist/index.d.ts", default: "./dist/index.js" }, "./x": "./dist/x.js" },
          files: ["dist", "docker", "bench", "README.md"],
        }),
      );
      const checked = spawnSync(process.execPath, [CHECK, "--dir", dir], { encoding: "utf8" });
      expect(checked.status, tail(checked)).toBe(1);
      const { violations } = JSON.parse(checked.stdout) as Summary;
      expect(violations).toEqual(
        expect.arrayContaining([
          "dist/index.js.map: a source map (the package ships no sources to map to)",
          "dist/test/helper.js: a test, fixture or benchmark",
          "dist/fixtures/big.js: a test, fixture or benchmark",
          "bench/run.js: a test, fixture or benchmark",
          "dist/load.bench.js: a test, fixture or benchmark",
          "dist/index.ts: a TypeScript source (.d.ts aside)",
          "docker/smoke/queue.sh: a test, fixture or benchmark",
          expect.stringMatching(/^unpacked \d+ B over the budget 3000000 B$/),
          "./dist/x.js: named by package.json, not in the package",
          "LICENSE: missing",
          "CHANGELOG.md: missing",
          "repository.url: expected git+https://github.com/OWNER/NAME.git, got undefined",
          "engines.node: missing",
        ]),
      );
      // A command's module named bench (flash bench's) is not a benchmark.
      expect(violations.filter((v) => /^dist\/(index|toolkit\/bench\/index)\.js:/.test(v))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("release rehearsal: published to a loopback npm registry, installed as the README says", () => {
  let rehearsal: Rehearsal;
  let summary: Summary;
  let parent = "";
  let dir = "";
  let made: ReturnType<typeof spawnSync>;
  const npx = (args: string[]) =>
    spawnSync("npx", args, { cwd: dir, encoding: "utf8", env: rehearsal.env, timeout: 120_000 });

  beforeAll(async () => {
    rehearsal = await startRehearsal();
    const checked = spawnSync(process.execPath, [CHECK, "--tarball", rehearsal.tarball], {
      encoding: "utf8",
    });
    expect(checked.status, tail(checked)).toBe(0);
    summary = JSON.parse(checked.stdout) as Summary;
    // A project where users make one: outside the repository, so nothing resolves from its node_modules.
    parent = mkdtempSync(join(tmpdir(), "flash-release-project-"));
    made = spawnSync("bash", ["-euo", "pipefail", "-c", commands], {
      cwd: parent,
      encoding: "utf8",
      env: { ...rehearsal.env, npm_config_audit: "false", npm_config_fund: "false" },
    });
    const name = /mkdir (\S+) && cd \1/.exec(commands)?.[1] ?? "";
    dir = join(parent, name);
  }, 10 * 60_000);

  afterAll(async () => {
    await rehearsal?.stop();
    if (parent) rmSync(parent, { recursive: true, force: true });
  });

  it("the package: every file allowed, within the README's budget, its exports resolving for ESM, require, node16 and bundlers", () => {
    expect(summary.violations).toEqual([]);
    // The budget README.md states is the one the script checks.
    const mb = (bytes: number) => `${bytes / 1_000_000} MB`;
    expect(readme).toContain(
      `${mb(summary.budget.packedBytes)} packed, ${mb(summary.budget.unpackedBytes)} unpacked, ${summary.budget.files} files`,
    );
    expect(readme).toContain(`Node ${manifest.engines.node.replace(" || >=", " or >= ")}`);
    expect(summary.types.entrypoints).toEqual([
      ".",
      "./testing",
      "./client",
      "./gpu",
      "./files",
      "./package.json",
    ]);
    // attw's only finding: CommonJS require() of an ES module, which every Node `engines` allows does (Node
    // ^20.19 and >=22.12 load ES modules for require; test/e2e/package.test.ts requires the package).
    expect(manifest.engines.node).toBe("^20.19.0 || >=22.12.0");
    expect(summary.types.problems).toEqual(
      [".", "./testing", "./client", "./gpu", "./files"].map((entrypoint) => ({
        kind: "CJSResolvesToESM",
        resolution: "node16-cjs",
        entrypoint,
      })),
    );
  });

  it("the registry serves the published tarball, byte for byte", async () => {
    const packument = (await (await fetch(`${rehearsal.url}/flash-worker`)).json()) as {
      "dist-tags": { latest: string };
      versions: Record<string, { dist: { tarball: string; integrity: string } }>;
    };
    expect(packument["dist-tags"].latest).toBe(manifest.version);
    const { dist } = packument.versions[manifest.version]!;
    const served = Buffer.from(await (await fetch(dist.tarball)).arrayBuffer());
    expect(served.equals(readFileSync(rehearsal.tarball))).toBe(true);
  });

  it("the README's commands install flash-worker from the registry: a semver range in package.json, no tarball, no vendor/", () => {
    expect(commands).toContain("npm install flash-worker\n");
    expect(made.status, tail(made as { stdout: string; stderr: string })).toBe(0);
    const project = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    expect(project.dependencies["flash-worker"]).toBe(`^${manifest.version}`);
    const lock = JSON.parse(readFileSync(join(dir, "package-lock.json"), "utf8")) as {
      packages: Record<string, { resolved?: string; version?: string; integrity?: string }>;
    };
    // The published tarball (its sha512), from the registry: npm leaves `resolved` out when its cache had it.
    const entry = lock.packages["node_modules/flash-worker"];
    expect(entry).toMatchObject({ version: manifest.version, integrity: sha512(rehearsal.tarball) });
    expect([undefined, `${rehearsal.url}/flash-worker/-/flash-worker-${manifest.version}.tgz`]).toContain(
      entry?.resolved,
    );
    expect(existsSync(join(dir, "vendor"))).toBe(false);
    expect(`${made.stdout}${made.stderr}`).not.toMatch(/EBADENGINE|deprecated flash-worker/);
  });

  it("npx tsc and `npx flash run handler.ts` answer the README's test input", () => {
    writeFileSync(join(dir, "handler.ts"), handlerTs);
    writeFileSync(join(dir, "test_input.json"), testInput);
    const tsconfig = start.find((s) => s.lang === "json" && s.text.includes('"compilerOptions"'))?.text ?? "";
    writeFileSync(join(dir, "tsconfig.json"), tsconfig);
    const tsc = npx(["tsc"]);
    expect(tsc.status, tail(tsc)).toBe(0);
    const ran = npx(["flash", "run", "handler.ts"]);
    expect(ran.status, tail(ran)).toBe(0);
    const words = (JSON.parse(testInput) as { input: { text: string } }).input.text.split(/\s+/).length;
    expect(ran.stdout.trim()).toBe(JSON.stringify({ output: { words } }));
  });

  it("`npx flash dev` serves the endpoint: the curl it prints answers COMPLETED", async () => {
    const port = await freePort();
    const child: ChildProcess = spawn("npx", ["flash", "dev", "--port", String(port), "--api-key", "k"], {
      cwd: dir,
      env: rehearsal.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let output = "";
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    try {
      const curl = await new Promise<string>((resolve, reject) => {
        const seen = (chunk: Buffer) => {
          output += chunk.toString();
          const line = /^Ready\. Try: (curl .*)$/m.exec(output)?.[1];
          if (line) resolve(line);
        };
        child.stdout?.on("data", seen);
        child.stderr?.on("data", seen);
        child.once("exit", () => reject(new Error(`flash dev exited:\n${output}`)));
      });
      // The printed command, run as a user pastes it.
      const answer = execFileSync("bash", ["-c", curl], { encoding: "utf8", timeout: 60_000 });
      expect(JSON.parse(answer)).toMatchObject({ status: "COMPLETED", output: { words: 3 } });
    } finally {
      // npx and the CLI under it: the group, so no worker outlives the test.
      if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
      await exited;
    }
  }, 120_000);
});

describe("release scripts refuse what would go wrong", () => {
  it("publish.sh publishes nowhere outside the release workflow unless rehearsing", () => {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => k !== "GITHUB_ACTIONS" && k !== "FLASH_RELEASE_REGISTRY"),
    );
    const tarball = join(tmpdir(), `flash-nothing-${process.pid}.tgz`);
    writeFileSync(tarball, "");
    try {
      const refused = spawnSync("bash", [join(ROOT, "scripts/release/publish.sh"), tarball], {
        encoding: "utf8",
        env,
      });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(
        "refusing to publish to the npm registry outside the release workflow",
      );
      const remote = spawnSync("bash", [join(ROOT, "scripts/release/publish.sh"), tarball], {
        encoding: "utf8",
        env: { ...env, FLASH_RELEASE_REGISTRY: "https://registry.npmjs.org" },
      });
      expect(remote.status).toBe(1);
      expect(remote.stderr).toContain("the rehearsal registry must be on 127.0.0.1");
    } finally {
      rmSync(tarball, { force: true });
    }
  });

  it("check-tag.sh takes v<version> of a version CHANGELOG.md has, from the repository package.json names", () => {
    const tag = (...args: string[]) =>
      spawnSync("bash", [join(ROOT, "scripts/release/check-tag.sh"), ...args], { encoding: "utf8" });
    const ok = tag(`v${manifest.version}`, "flash-worker/flash-worker");
    expect(ok.status, tail(ok)).toBe(0);
    expect(tag("v9.9.9").stderr).toContain(`tag v9.9.9 is not v${manifest.version}`);
    expect(tag(`v${manifest.version}`, "someone/else").stderr).toContain("not github.com/someone/else");
  });

  it("changelog.mjs (npm version's script) moves Unreleased under the new version, and refuses an empty one", () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-changelog-"));
    try {
      cpSync(join(ROOT, "CHANGELOG.md"), join(dir, "CHANGELOG.md"));
      const run = (version: string) => {
        writeFileSync(join(dir, "package.json"), JSON.stringify({ version }));
        return spawnSync(process.execPath, [join(ROOT, "scripts/release/changelog.mjs"), dir], {
          encoding: "utf8",
        });
      };
      const empty = run("0.1.1");
      expect(empty.status).toBe(1);
      expect(empty.stderr).toContain('nothing under "## Unreleased" to release as 0.1.1');
      const text = readFileSync(join(dir, "CHANGELOG.md"), "utf8");
      writeFileSync(
        join(dir, "CHANGELOG.md"),
        text.replace("## Unreleased\n", "## Unreleased\n\n- `flash dev` learned X.\n"),
      );
      const moved = run("0.2.0");
      expect(moved.status, tail(moved)).toBe(0);
      const after = readFileSync(join(dir, "CHANGELOG.md"), "utf8");
      expect(after).toMatch(/## Unreleased\n\n## 0\.2\.0\n\n- `flash dev` learned X\.\n\n## 0\.1\.0\n/);
      expect(run("0.1.0").stderr).toContain('has a "## 0.1.0" heading already');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
