// A real OCI registry (Debian's docker-registry) on a loopback port, and buildah on a kept vfs storage, for the
// deploy end-to-end tests.
import { type ChildProcess, type SpawnSyncReturns, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../process.js";

/** A registry on a free loopback port with its own store; `readonly` refuses pushes. */
export async function startRegistry(readonly = false): Promise<{ url: string; host: string; stop(): void }> {
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
