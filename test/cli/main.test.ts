// The built `flash` command's own flags: --help and --version, and each command's generated --help.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { VERSION } from "../../src/version.js";
import { FLASH, ROOT } from "../process.js";

const flash = (...args: string[]) =>
  spawnSync(process.execPath, [FLASH, ...args], { cwd: ROOT, encoding: "utf8" });

describe("flash", () => {
  it("--version prints the package version", () => {
    const out = flash("--version");
    expect(out.status).toBe(0);
    expect(out.stdout).toBe(`${VERSION}\n`);
  });

  it("--help lists every command from the commands' own tables", () => {
    const out = flash("--help");
    expect(out.status).toBe(0);
    for (const name of ["run", "start", "dev", "serve", "login", "build", "deploy"]) {
      expect(out.stdout).toMatch(new RegExp(`^  ${name} `, "m"));
    }
  });

  it("<command> --help shows its options and runs nothing", () => {
    const out = flash("deploy", "--help");
    expect(out.status).toBe(0);
    expect(out.stdout).toMatch(/^usage: flash deploy \[files\.\.\.\] \[options\]/);
    expect(out.stdout).toContain("--image REGISTRY/NAME:TAG");
    expect(out.stdout).toContain("--tls-verify[=true|false]");
    expect(out.stdout).toContain("--node-version V");
  });

  it("a toolkit command refuses another command's flag with a clear error", () => {
    const out = flash("build", "--workers", "3", "x.ts");
    expect(out.status).toBe(1);
    expect(out.stderr).toBe("✗ Unknown option --workers (flash build takes --node-version)\n");
  });

  it("npm run build leaves dist/cli/main.js executable: `npx flash run` works in a clone", () => {
    expect(statSync(FLASH).mode & 0o111).toBe(0o111);
    const out = spawnSync("npx", ["--offline", "flash", "run", "examples/echo/handler.ts"], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(out.stderr).not.toContain("Permission denied");
    expect(out.status, out.stderr).toBe(0);
    expect(out.stdout).toBe('{"output":{"name":"flash","message":"hello"}}\n');
  });
});
