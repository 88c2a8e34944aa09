// The container tool on this machine (buildah, podman or docker): found once, called the same way by image
// builds (src/toolkit/image) and by the local platform's deployed workers (src/platform/rest).

import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { FlashError, isFlashError } from "../flash-error.js";
import { isLoopback } from "../http/loopback.js";

export type ContainerToolName = "buildah" | "podman" | "docker";

export interface ContainerToolOptions {
  /** Use this one (FLASH_CONTAINER_TOOL); default: buildah, then podman, then a docker whose engine answers. */
  tool?: ContainerToolName;
  /** A buildah/podman storage folder of our own (vfs driver), instead of the machine's default storage. */
  storage?: string;
  env?: Record<string, string | undefined>;
}

/** No container tool: the message says what to install. */
export class NoContainerToolError extends FlashError {
  readonly code = "CONTAINER_TOOL_MISSING";
  override name = "NoContainerToolError";
  constructor(detail: string) {
    super(
      `${detail}. Install buildah (Debian/Ubuntu: apt-get install --no-install-recommends buildah; it needs no daemon), podman, or Docker with a running engine.`,
    );
  }
}

/** By code, as every check of our errors is (two copies of the package may be loaded). */
export const isContainerToolError = (err: unknown): err is ContainerToolError =>
  isFlashError(err, "CONTAINER_TOOL_FAILED");

/** A container tool command failed; the message ends with the last lines it printed. */
export class ContainerToolError extends FlashError {
  readonly code = "CONTAINER_TOOL_FAILED";
  override name = "ContainerToolError";
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly output: string,
  ) {
    const tail = output.trim().split("\n").slice(-6).join("\n  ");
    super(`${command} failed (exit ${exitCode ?? "signal"})${tail ? `:\n  ${tail}` : ""}`);
  }
}

/** An image with neither ENTRYPOINT nor CMD: a container of it has nothing to run. */
export class ImageCommandError extends FlashError {
  readonly code = "IMAGE_COMMAND_MISSING";
  override name = "ImageCommandError";
}

export interface ContainerTool {
  name: ContainerToolName;
  /** argv[0] and the storage flags every call starts with. */
  prefix: readonly string[];
}

const worksFor: Record<ContainerToolName, readonly string[]> = {
  buildah: ["--version"],
  podman: ["--version"],
  // The docker client is often installed without an engine: only an answering engine counts.
  docker: ["info", "--format", "{{.ServerVersion}}"],
};

function answers(name: ContainerToolName, env: Record<string, string | undefined>): boolean {
  const run = spawnSync(name, worksFor[name], {
    stdio: "ignore",
    timeout: 15_000,
    env: env as NodeJS.ProcessEnv,
  });
  return run.status === 0;
}

/** The tool to use; throws NoContainerToolError when there is none. */
export function findContainerTool(options: ContainerToolOptions = {}): ContainerTool {
  const env = options.env ?? process.env;
  const candidates: ContainerToolName[] = options.tool ? [options.tool] : ["buildah", "podman", "docker"];
  const name = candidates.find((candidate) => answers(candidate, env));
  if (!name) {
    throw new NoContainerToolError(
      options.tool
        ? `The container tool ${options.tool} (FLASH_CONTAINER_TOOL) does not run here`
        : "No container tool found: buildah, podman and docker are not on PATH (or docker has no engine)",
    );
  }
  const prefix: string[] = [name];
  if (options.storage && name !== "docker") {
    // vfs needs neither fuse nor overlay support, so it works in containers and VMs alike.
    prefix.push(
      "--root",
      join(options.storage, "storage"),
      "--runroot",
      join(options.storage, "run"),
      "--storage-driver",
      "vfs",
    );
  }
  return { name, prefix };
}

export interface RunOptions {
  /** Each output line (stdout and stderr), as it comes. */
  onLine?: (line: string, stream: "stdout" | "stderr") => void;
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
}

export interface RunResult {
  stdout: string;
  output: string;
}

/** Runs one tool command to its end; rejects with ContainerToolError on a non-zero exit. */
export function runTool(
  tool: ContainerTool,
  args: readonly string[],
  options: RunOptions = {},
): Promise<RunResult> {
  const [command, ...prefix] = tool.prefix;
  const argv = [...prefix, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(command!, argv, {
      stdio: ["ignore", "pipe", "pipe"],
      env: (options.env ?? process.env) as NodeJS.ProcessEnv,
      signal: options.signal,
    });
    let stdout = "";
    let output = "";
    for (const [stream, name] of [
      [child.stdout, "stdout"],
      [child.stderr, "stderr"],
    ] as const) {
      createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
        if (name === "stdout") stdout += `${line}\n`;
        output += `${line}\n`;
        options.onLine?.(line, name);
      });
    }
    child.once("error", (err) =>
      reject(new ContainerToolError(`${tool.name} ${args[0] ?? ""}`, null, err.message)),
    );
    child.once("close", (code) => {
      if (code === 0) resolve({ stdout, output });
      else reject(new ContainerToolError(`${tool.name} ${args.slice(0, 2).join(" ")}`, code, output));
    });
  });
}

/** The argv that runs `args` with the tool (for processes the caller spawns and supervises itself). */
export function toolArgv(tool: ContainerTool, args: readonly string[]): string[] {
  return [...tool.prefix, ...args];
}

/** True for a registry host on this machine (127.0.0.1, ::1, localhost): TLS is off there by default. */
export function isLoopbackRegistry(image: string): boolean {
  if (!image.includes("/")) return false;
  const host = image.split("/")[0] ?? "";
  return isLoopback(host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, ""));
}

/**
 * What a container of the image runs, as `docker run` would: ENTRYPOINT, then `args` or else CMD. buildah run
 * needs it spelled out; it reads the image's config only here.
 */
export async function imageCommand(
  tool: ContainerTool,
  image: string,
  args?: readonly string[],
): Promise<string[]> {
  const { stdout } = await runTool(tool, ["inspect", "--type", "image", image]);
  const config = (JSON.parse(stdout) as { OCIv1?: { config?: { Entrypoint?: string[]; Cmd?: string[] } } })
    .OCIv1?.config;
  const command = [...(config?.Entrypoint ?? []), ...(args ?? config?.Cmd ?? [])];
  if (command.length === 0)
    throw new ImageCommandError(`Image ${image} has neither ENTRYPOINT nor CMD to run`);
  return command;
}
