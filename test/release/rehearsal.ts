// The release rehearsal's registry, shared by the tests that install flash-worker as users will: the package
// packed by scripts/release/pack.sh, a real npm registry (verdaccio) on a loopback port started by
// scripts/release/registry.sh, and the tarball published there by scripts/release/publish.sh — the scripts the
// release workflow runs. An npm user config pointing at it is what a test hands npm (`npm_config_userconfig`).
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, ROOT } from "../process.js";

export interface Rehearsal {
  /** http://127.0.0.1:PORT */
  url: string;
  /** The published tarball. */
  tarball: string;
  /** An npm user config: this machine's own, then `registry=` the rehearsal's. */
  userconfig: string;
  /** The environment for npm: ours less npm's lifecycle variables, with the user config above. */
  env: NodeJS.ProcessEnv;
  /** Lines verdaccio wrote, for a failing test's message. */
  log: string[];
  stop(): Promise<void>;
}

/** Where this machine's npm reads its user config: its registry mirror, cache or proxy stay in effect. */
function hostNpmrc(): string {
  const path = spawnSync("npm", ["config", "get", "userconfig"], { encoding: "utf8" }).stdout.trim();
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** Packs the built package, starts the registry and publishes the tarball to it. */
export async function startRehearsal(): Promise<Rehearsal> {
  const work = mkdtempSync(join(tmpdir(), "flash-release-"));
  const tarball = execFileSync("bash", [join(ROOT, "scripts/release/pack.sh"), join(work, "pack")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log: string[] = [];
  const child: ChildProcess = spawn(
    "bash",
    [join(ROOT, "scripts/release/registry.sh"), join(work, "registry"), String(port)],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stdout?.on("data", (d: Buffer) => log.push(d.toString()));
  child.stderr?.on("data", (d: Buffer) => log.push(d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
    rmSync(work, { recursive: true, force: true });
  };
  try {
    for (let i = 0; ; i++) {
      const up = await fetch(`${url}/-/ping`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 300 || child.exitCode !== null) throw new Error(`the registry did not start:\n${log.join("")}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^npm_(config|lifecycle|package)_/i.test(k)),
    );
    const published = spawnSync("bash", [join(ROOT, "scripts/release/publish.sh"), tarball], {
      encoding: "utf8",
      env: { ...env, FLASH_RELEASE_REGISTRY: url, GITHUB_ACTIONS: "" },
    });
    if (published.status !== 0)
      throw new Error(`publish.sh failed:\n${published.stdout}${published.stderr}\n${log.join("")}`);
    const userconfig = join(work, "npmrc");
    writeFileSync(userconfig, `${hostNpmrc()}\nregistry=${url}/\n`);
    return { url, tarball, userconfig, env: { ...env, npm_config_userconfig: userconfig }, log, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
