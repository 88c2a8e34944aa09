// `flash image base` pulls this version's published runtime image before building one (issue 49): a release's
// image pushed by scripts/release/images.sh to a loopback registry is pulled into a fresh storage and named
// flash-worker:cpu with the pushed digest; a registry that does not answer, or --build, builds it here instead.
// Needs root, buildah and docker-registry (scripts/test-deps.sh); skipped without root.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { flashRun, freePort, ROOT } from "../process.js";
import { buildahIn, describeWithImages, type Registry, startRegistry } from "./registry.js";

const VERSION = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string }).version;
// A node base that is nowhere: a build that starts fails at once, naming it, instead of building for minutes.
const NO_BASE = "localhost/flash-test-no-such-base:none";

describeWithImages("flash image base: the published image first", () => {
  let registry: Registry;
  let work: string;
  let pushed: string;

  beforeAll(async () => {
    registry = await startRegistry();
    work = mkdtempSync(join(tmpdir(), "flash-image-pull-"));
    // The release's stand-in: a one-layer image named as docker/build.sh names the runtime image.
    const release = buildahIn(join(work, "release"));
    const from = release(["from", "scratch"]);
    expect(from.status, from.stderr).toBe(0);
    const container = from.stdout.trim();
    release(["config", "--cmd", '["/flash-test"]', container]);
    expect(release(["commit", "-q", container, "localhost/flash-worker:cpu"]).status).toBe(0);
    release(["rm", container]);
    const push = spawnSync(
      "bash",
      [join(ROOT, "scripts/release/images.sh"), "push", `${registry.host}/flash-worker`, VERSION, "cpu"],
      { env: { ...process.env, FLASH_IMAGE_WORK: join(work, "release") }, encoding: "utf8" },
    );
    expect(push.status, push.stderr).toBe(0);
    pushed = push.stdout.trim().split("@")[1] ?? "";
    expect(pushed).toMatch(/^sha256:[0-9a-f]{64}$/);
  }, 120_000);

  afterAll(() => {
    registry?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const base = (storage: string, repo: string, ...flags: string[]) =>
    flashRun(["image", "base", "--cpu", ...flags], {
      FLASH_CONTAINER_STORAGE: join(work, storage),
      FLASH_IMAGE_REPO: repo,
      FLASH_NODE_BASE_IMAGE: NO_BASE,
    });

  it("pulls <repo>:<version>-cpu and names it flash-worker:cpu, with the pushed digest", async () => {
    const { code, stdout, stderr } = await base("pulled", `${registry.host}/flash-worker`);
    expect(code, stderr).toBe(0);
    expect(stdout).toContain(
      `✓ localhost/flash-worker:cpu pulled from ${registry.host}/flash-worker:${VERSION}-cpu (FROM flash-worker:cpu in your Dockerfile)`,
    );
    expect(stdout).not.toContain("Building");
    const images = buildahIn(join(work, "pulled"))([
      "images",
      "--digests",
      "--format",
      "{{.Name}}:{{.Tag}} {{.Digest}}",
    ]);
    // buildah pads the columns: compare name and digest, whatever the spaces between them.
    const rows = images.stdout.split("\n").map((row) => row.trim().split(/\s+/).join(" "));
    expect(rows).toContain(`localhost/flash-worker:cpu ${pushed}`);
  }, 120_000);

  it("builds here, saying why, when the registry does not answer", async () => {
    const dead = `127.0.0.1:${await freePort()}/flash-worker`;
    const { code, stdout, stderr } = await base("unreachable", dead);
    expect(stdout).toContain(`${dead}:${VERSION}-cpu could not be pulled (`);
    expect(stdout).toContain("connection refused): building it here");
    expect(stdout).toContain(
      `Building localhost/flash-worker:cpu from ${join(ROOT, "Dockerfile.cpu")} on ${NO_BASE}`,
    );
    // The build itself fails on the base that is nowhere: proof it was tried, without minutes of building.
    expect(code).toBe(1);
    expect(stderr).toContain(NO_BASE);
  }, 120_000);

  it("--build skips the pull even when the release is there", async () => {
    const { code, stdout } = await base("forced", `${registry.host}/flash-worker`, "--build");
    expect(stdout).not.toContain("pulled");
    expect(stdout).not.toContain("could not be pulled");
    expect(stdout).toContain(
      `Building localhost/flash-worker:cpu from ${join(ROOT, "Dockerfile.cpu")} on ${NO_BASE}`,
    );
    expect(code).toBe(1);
  }, 120_000);
});
