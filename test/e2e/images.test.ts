// The base images, built and smoke-tested for real by docker/build.sh (buildah, vfs storage, chroot isolation,
// a debootstrap stand-in for the registry bases). Slow (minutes) and needs root, buildah and debootstrap,
// so it runs only when FLASH_IMAGE_TESTS=1 (CI sets it); otherwise it is skipped, saying why.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

const hasBuildah = spawnSync("buildah", ["--version"], { stdio: "ignore" }).status === 0;
const enabled = process.env.FLASH_IMAGE_TESTS === "1";
const skipReason = !enabled
  ? "FLASH_IMAGE_TESTS is not 1"
  : !hasBuildah
    ? "buildah is not installed (apt-get install buildah debootstrap)"
    : undefined;

/** Build, smoke tests and their summary; the whole output goes to test-artifacts/images.log. */
function runBuild(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    // `npm test` has just built dist/, and other test files run it meanwhile: no second tsc under them.
    const args = existsSync(join(ROOT, "dist/cli/main.js")) ? ["--no-tsc"] : [];
    const child = spawn("bash", [join(ROOT, "docker/build.sh"), ...args], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.on("close", (code) => {
      const output = Buffer.concat(chunks).toString("utf8");
      mkdirSync(join(ROOT, "test-artifacts"), { recursive: true });
      writeFileSync(join(ROOT, "test-artifacts/images.log"), output);
      resolve({ code, output });
    });
  });
}

describe("flash-worker:cpu and flash-worker:cuda images (docker/build.sh)", () => {
  if (skipReason !== undefined) {
    it.skip(`skipped: ${skipReason}`, () => {});
    return;
  }

  it("build, and every smoke test passes inside the images", { timeout: 20 * 60_000 }, async () => {
    const { code, output } = await runBuild();
    const summary = output.slice(output.lastIndexOf("\n== smoke tests"));
    expect(code, summary).toBe(0);
    for (const check of [
      "PASS  echo (cpu): --test-input answered through ENTRYPOINT + CMD",
      "PASS  echo (cpu): queue worker takes a job; SIGTERM via tini mid-job drains it, posts, exits 0",
      "PASS  cpu image: ESM handler.js and handler.mjs in /app import the image's flash-worker",
      "PASS  cpu image: an app's own flash-worker 9.9.9 is reported and used",
      "PASS  stream (cpu): generator chunks answered through ENTRYPOINT + CMD",
      "PASS  echo (cuda): --test-input answered; the GPU report line does not fail a CPU host",
    ]) {
      expect(output, summary).toContain(check);
    }
    expect(output).toMatch(/PASS {2}load-balanced \(cpu\)|SKIP {2}load-balanced/);
    expect(output).toContain("== not checked here");
    expect(output).toMatch(/failed: 0/);
  });
});
