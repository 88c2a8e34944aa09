// The app's npm dependencies, installed at build time into .flash/.build and shipped as node_modules/ in the
// artifact (the toolkit's `pip install --target` step): workers run the artifact as it is, with no install.
import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { Logger } from "../../log/index.js";
import { BuildError } from "./errors.js";

/** The runtime is part of every worker image and platform; an app's own copy is never shipped. */
const RUNTIME_PACKAGE = "flash-worker";
/** The toolkit's install timeout (600 s). */
export const INSTALL_TIMEOUT_MS = 600_000;
/** Where the install runs, under the project's .flash/ folder. */
export const INSTALL_DIR = ".build";

/** OS and CPU the installed packages are chosen for (npm's `os`/`cpu` fields). */
export interface TargetPlatform {
  os: string;
  cpu: string;
}

/** What the images and the platform's workers run. */
export const WORKER_PLATFORM: TargetPlatform = { os: "linux", cpu: "x64" };

/** `name@range` → [name, range]; a scoped name keeps its leading @, and the range may hold more (`npm:x@1`). */
function parseSpec(spec: string): [string, string] {
  const at = spec.indexOf("@", 1);
  return at > 0 ? [spec.slice(0, at), spec.slice(at + 1) || "*"] : [spec, "*"];
}

/** A `file:` / `link:` spec relative to the project is made absolute: the install runs in another folder. */
function fromProject(root: string, range: string): string {
  const m = /^(file|link):(.*)$/.exec(range);
  if (!m || isAbsolute(m[2]!)) return range;
  return `${m[1]}:${resolve(root, m[2]!)}`;
}

/**
 * The packages to install: package.json `dependencies` (not devDependencies), then each endpoint's
 * `dependencies` (npm specs such as `zod@^3`), less flash-worker.
 */
export function dependencySpecs(
  root: string,
  endpointDependencies: readonly string[],
  log?: Logger,
): Record<string, string> {
  const specs = new Map<string, string>();
  const pkgPath = join(root, "package.json");
  if (existsSync(pkgPath)) {
    let pkg: { dependencies?: unknown };
    try {
      pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { dependencies?: unknown };
    } catch (err) {
      throw new BuildError(`package.json is not valid JSON: ${(err as Error).message}`);
    }
    const deps = pkg.dependencies ?? {};
    if (typeof deps !== "object" || deps === null || Array.isArray(deps)) {
      throw new BuildError("package.json: dependencies must be an object of package names to versions");
    }
    for (const [name, range] of Object.entries(deps as Record<string, unknown>)) {
      specs.set(name, fromProject(root, String(range)));
    }
  }
  for (const spec of endpointDependencies) {
    const [name, raw] = parseSpec(spec);
    const range = fromProject(root, raw);
    const before = specs.get(name);
    if (before !== undefined && before !== range) {
      log?.warn(`Endpoint dependency ${spec} replaces ${name}@${before} from package.json`);
    }
    specs.set(name, range);
  }
  specs.delete(RUNTIME_PACKAGE);
  return Object.fromEntries(specs);
}

export interface InstallOptions {
  target: TargetPlatform;
  log?: Logger;
  timeoutMs?: number;
  /** The npm command (default: `npm` on PATH). */
  npm?: string;
}

/**
 * Installs `specs` into <root>/.flash/.build with npm (production only, no install scripts, packages for the
 * target OS/CPU) and returns that folder, whose node_modules/ ships; undefined when there is nothing to install.
 */
export async function installDependencies(
  root: string,
  workDir: string,
  specs: Record<string, string>,
  options: InstallOptions,
): Promise<string | undefined> {
  const { log } = options;
  const dir = join(workDir, INSTALL_DIR);
  rmSync(dir, { recursive: true, force: true });
  const names = Object.keys(specs);
  if (names.length === 0) {
    log?.info("No dependencies to install");
    return undefined;
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify({ name: "flash-build", private: true, dependencies: specs }, null, 2)}\n`,
  );
  // the project's lock keeps its resolved versions; its .npmrc keeps its registry and credentials
  for (const file of ["package-lock.json", ".npmrc"]) {
    if (existsSync(join(root, file))) copyFileSync(join(root, file), join(dir, file));
  }
  log?.info(`Installing dependencies for ${options.target.os}-${options.target.cpu}: [${names.join(", ")}]`);
  const started = Date.now();
  const args = [
    "install",
    "--omit=dev",
    "--ignore-scripts",
    "--no-audit",
    "--no-fund",
    "--no-update-notifier",
    `--os=${options.target.os}`,
    `--cpu=${options.target.cpu}`,
  ];
  const { code, output } = await runNpm(
    options.npm ?? "npm",
    args,
    dir,
    options.timeoutMs ?? INSTALL_TIMEOUT_MS,
  );
  if (code !== 0) {
    const tail = output.trim().split("\n").slice(-12).join("\n");
    throw new BuildError(`Failed to install dependencies (npm ${args.join(" ")}):\n${tail}`);
  }
  log?.info(`Installed ${names.length} dependencies in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return dir;
}

/** Runs npm and collects its output; a missing npm or a timeout is a BuildError. */
function runNpm(
  npm: string,
  args: string[],
  cwd: string,
  timeoutMs: number,
): Promise<{ code: number | null; output: string }> {
  return new Promise((done, reject) => {
    const child = spawn(npm, args, {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      // npm.cmd on Windows is a batch file
      shell: process.platform === "win32",
      env: { ...process.env, npm_config_loglevel: "error" },
    });
    let output = "";
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new BuildError(`Installing dependencies took longer than ${timeoutMs / 1000}s; npm was stopped`),
      );
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(
        new BuildError(
          `Could not run ${npm} to install the app's dependencies: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
        ),
      );
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      done({ code, output });
    });
  });
}
