// A real OCI registry (Debian's docker-registry) on a loopback port, buildah on a kept vfs storage with the stand-in
// base, and the gate every image suite opens with: what the deploy and Pod end-to-end tests share.
import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { type ConformanceProxy, conformanceProxy } from "../deploy/openapi.js";
import { freePort, ROOT } from "../process.js";

export interface Registry {
  url: string;
  /** host:port, what image names start with. */
  host: string;
  stop(): void;
}

/** A registry on a free loopback port with its own store; `readonly` refuses pushes. */
export async function startRegistry(readonly = false): Promise<Registry> {
  const dir = mkdtempSync(join(tmpdir(), "flash-registry-"));
  const port = await freePort();
  writeFileSync(
    join(dir, "config.yml"),
    [
      "version: 0.1",
      "log:",
      "  level: warn",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${join(dir, "data")}`,
      ...(readonly ? ["  maintenance:", "    readonly:", "      enabled: true"] : []),
      "http:",
      `  addr: 127.0.0.1:${port}`,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn("docker-registry", ["serve", join(dir, "config.yml")], {
    stdio: "ignore",
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    if (
      await fetch(`${url}/v2/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    host: `127.0.0.1:${port}`,
    stop() {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** buildah on its own vfs storage under `storage` (what FLASH_CONTAINER_STORAGE points the CLI at). */
export function buildahIn(storage: string): (args: string[]) => SpawnSyncReturns<string> {
  return (args) =>
    spawnSync(
      "buildah",
      [
        "--root",
        join(storage, "storage"),
        "--runroot",
        join(storage, "run"),
        "--storage-driver",
        "vfs",
        ...args,
      ],
      { encoding: "utf8" },
    );
}

/** Where the deploy suites keep buildah's vfs storage between runs (the stand-in base is made once). */
export const DEPLOY_STORAGE = process.env.FLASH_DEPLOY_TEST_STORAGE ?? "/var/tmp/flash-deploy-storage";
/** The Debian + node stand-in for node:24-bookworm-slim that docker/build.sh makes. */
export const STANDIN = "localhost/flash-standin:bookworm";

const has = (command: string, args: string[]) => spawnSync(command, args, { stdio: "ignore" }).status === 0;

/**
 * Whether an image suite can run here. A missing tool fails the suite naming what to install (scripts/test-deps.sh
 * installs both); only a run without root skips, saying so, since buildah's vfs storage with chroot isolation needs it.
 */
export function imageSuiteGate(): { skipReason?: string; missingTool?: string } {
  if (process.getuid?.() !== 0)
    return { skipReason: "not root (buildah's vfs storage with chroot isolation needs it)" };
  if (!has("buildah", ["--version"]))
    return {
      missingTool:
        "buildah is not installed (apt-get install buildah debootstrap, or run scripts/test-deps.sh as root)",
    };
  if (!has("docker-registry", ["--version"]))
    return {
      missingTool:
        "docker-registry is not installed (apt-get install docker-registry, or run scripts/test-deps.sh as root)",
    };
  return {};
}

/** Makes the stand-in base in `storage` with the images' own script, unless it is there already. */
export function ensureStandin(storage: string): void {
  if (buildahIn(storage)(["inspect", "--type", "image", STANDIN]).status === 0) return;
  const made = spawnSync("bash", [join(ROOT, "docker/build.sh"), "--no-tsc", "--standin-only"], {
    env: { ...process.env, FLASH_IMAGE_WORK: storage },
    encoding: "utf8",
  });
  if (made.status !== 0)
    throw new Error(`docker/build.sh --standin-only failed:\n${made.stdout}${made.stderr}`);
}

/** A GET through a server with a Host header, as a browser sends it to a `.localhost` URL (fetch cannot set one). */
export function viaHost(port: number, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => {
        body += chunk.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** A describe block that needs buildah and docker-registry: skipped without root, failed when a tool is missing. */
export function describeWithImages(name: string, body: () => void): void {
  describe(name, () => {
    const { skipReason, missingTool } = imageSuiteGate();
    if (skipReason !== undefined) {
      it.skip(`skipped: ${skipReason}`, () => {});
      return;
    }
    if (missingTool !== undefined) {
      it("has buildah and docker-registry", () => {
        throw new Error(missingTool);
      });
      return;
    }
    body();
  });
}

/** What the deploy and Pod suites deploy to: a registry, the local platform running buildah containers, its REST API judged by the OpenAPI document. */
export interface LocalCloud {
  registry: Registry;
  platform: Platform;
  /** The platform's REST v2 behind a proxy that records every exchange the OpenAPI document does not allow. */
  proxy: ConformanceProxy;
  /** The platform's log lines (INFO), for a failing test's message. */
  platformLog: string[];
  /** Stops all three, then removes the images named after a loopback registry from the kept storage. */
  close(): Promise<void>;
}

/** Starts the local cloud on DEPLOY_STORAGE (the stand-in base made there if missing), the platform with its API key. */
export async function startLocalCloud(apiKey: string, workerStopGraceMs: number): Promise<LocalCloud> {
  ensureStandin(DEPLOY_STORAGE);
  const registry = await startRegistry();
  const platformLog: string[] = [];
  const platform = await startPlatform({
    apiKey,
    workerStopGraceMs,
    containers: { tool: "buildah", storage: DEPLOY_STORAGE },
    logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => platformLog.push(l) } }),
  });
  const proxy = await conformanceProxy(platform.url);
  return {
    registry,
    platform,
    proxy,
    platformLog,
    async close() {
      await proxy.close();
      await platform.close();
      registry.stop();
      // Images built or pulled here (named after loopback registries) would pile up in the kept storage, a full copy each under vfs.
      const buildah = buildahIn(DEPLOY_STORAGE);
      const names = buildah(["images", "--format", "{{.Name}}:{{.Tag}}"]).stdout.split("\n");
      const built = names.filter((name) => name.startsWith("127.0.0.1:"));
      if (built.length > 0) buildah(["rmi", "--force", ...built]);
    },
  };
}
