// The GitHub Actions workflows cannot run here: each one passes a workflow linter (@action-validator/cli, the
// schema GitHub's own editor uses), and each `run:` step is one command of this repository — a script the
// suites run (test/release/release.test.ts, .ci/run), an npm script, or `npm ci` — so what runs there is what
// is tested here.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

const DIR = join(ROOT, ".github/workflows");
const workflows = readdirSync(DIR).filter((f) => /\.ya?ml$/.test(f));
const lint = (file: string) =>
  spawnSync(process.execPath, [join(ROOT, "node_modules/@action-validator/cli/cli.mjs"), file], {
    encoding: "utf8",
  });
const scripts = Object.keys(
  (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> })
    .scripts,
);

/** The `run:` lines of a workflow (each is one line here: a multi-line run would hide logic from the suites). */
function runSteps(text: string): string[] {
  return [...text.matchAll(/^\s+(?:- )?run: (.*)$/gm)].map((m) => m[1]!.trim());
}

describe("GitHub Actions workflows", () => {
  it("are there: ci and release", () => {
    expect(workflows.sort()).toEqual(["ci.yml", "release.yml"]);
  });

  it("the linter runs here and catches a broken workflow", () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-workflow-"));
    try {
      const broken = join(dir, "broken.yml");
      // `runs-on` misspelt: GitHub refuses such a workflow.
      writeFileSync(broken, readFileSync(join(DIR, "ci.yml"), "utf8").replace("runs-on:", "runs-onn:"));
      const result = lint(broken);
      expect(result.status).toBe(1);
      expect(`${result.stdout}${result.stderr}`).toContain("Additional property 'runs-onn' is not allowed");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const file of workflows) {
    it(`${file} passes the linter`, () => {
      const result = lint(join(DIR, file));
      expect(result.status, `${result.stdout}${result.stderr}`).toBe(0);
    });

    it(`${file}: every run step is a script of the repository, an npm script or npm ci`, () => {
      const steps = runSteps(readFileSync(join(DIR, file), "utf8"));
      expect(steps.length).toBeGreaterThan(0);
      for (const step of steps) {
        // sudo's wrapper aside, the command itself.
        const command = step.replace(/^sudo -E env "PATH=\$PATH" /, "");
        const script = /^(?:bash|node) (\S+)/.exec(command)?.[1];
        const npmScript = /^npm run (\S+)$/.exec(command)?.[1];
        if (script) expect(existsSync(join(ROOT, script)), `${file}: ${step}`).toBe(true);
        else if (npmScript) expect(scripts, `${file}: ${step}`).toContain(npmScript);
        else expect(command, `${file}: ${step}`).toMatch(/^npm ci( --[\w-]+)*$/);
      }
    });
  }

  it("ci.yml runs .ci/run on the lowest Node engines allows and on the images' Node", () => {
    const ci = readFileSync(join(DIR, "ci.yml"), "utf8");
    const engines = (
      JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { engines: { node: string } }
    ).engines.node;
    const lowest = /^\^(\d+\.\d+\.\d+)/.exec(engines)?.[1];
    expect(ci).toContain(`node: ["${lowest}", "24"]`);
    expect(readFileSync(join(ROOT, "Dockerfile.cpu"), "utf8")).toMatch(/node:24-bookworm-slim/);
    expect(runSteps(ci)).toContain("bash .ci/run");
    expect(ci).toMatch(/^ {2}pull_request:/m);
  });

  it("release.yml: on a version tag, checks, packs, checks the package, publishes with provenance, pushes and attests both images", () => {
    const release = readFileSync(join(DIR, "release.yml"), "utf8");
    expect(release).toContain('tags: ["v[0-9]+.[0-9]+.[0-9]+*"]');
    const steps = runSteps(release).join("\n");
    for (const script of [
      "scripts/release/check-tag.sh",
      "scripts/release/pack.sh",
      "scripts/release/check-package.mjs",
      "scripts/release/publish.sh",
      "docker/build.sh --real-bases",
      "scripts/release/images.sh push",
      "scripts/release/images.sh attest",
    ])
      expect(steps).toContain(script);
    // Every flavour docker/build.sh --real-bases makes is pushed: images.sh's default, the four it knows.
    expect(steps).toMatch(/images\.sh push "\$IMAGE_REPO" "\$\{GITHUB_REF_NAME#v\}" >/);
    const unknown = spawnSync(
      "bash",
      [join(ROOT, "scripts/release/images.sh"), "push", "r", "1.0.0", "gpu"],
      {
        encoding: "utf8",
      },
    );
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("no such flavour: gpu (cpu cuda cuda-runtime cuda-cudnn)");
    const build = readFileSync(join(ROOT, "docker/build.sh"), "utf8");
    expect(build).toContain("for flavor in runtime:runtime cudnn:cudnn-runtime");
    // npm provenance and keyless signing need the workflow's OIDC token.
    expect(release.match(/id-token: write/g)).toHaveLength(2);
  });
});
