// `flash image build|run`: `docker build` and `docker run` habits without a Docker engine. With buildah, build
// keeps the Docker format (HEALTHCHECK survives) under chroot isolation, and run starts the image's ENTRYPOINT
// and CMD and passes Ctrl-C and SIGTERM to every process of the container; podman and docker run as they are.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, parseConfig } from "../config/index.js";
import {
  type ContainerTool,
  findContainerTool,
  imageCommand,
  runTool,
  toolArgv,
} from "../containers/tool.js";
import { containerEntry } from "../platform/workers/terminate.js";
import { containerOptions } from "./local-platform.js";
import type { CommandSpec } from "./options.js";

export const spec: CommandSpec = {
  name: "image",
  args: "build [DIR] | run IMAGE [ARG...]",
  summary: "docker build / docker run with buildah (or podman, docker): ENTRYPOINT, CMD and signals kept",
  options: [
    { flag: "--tag", short: "t", value: "TAG", help: "build: the image's name" },
    { flag: "--file", short: "f", value: "FILE", help: "build: the Dockerfile (default DIR/Dockerfile)" },
    {
      flag: "--env",
      short: "e",
      value: "KEY=VALUE",
      help: "run: an environment variable (KEY alone: this one's)",
    },
  ],
};

const USAGE = [
  "usage: flash image build [-t TAG] [-f Dockerfile] [DIR]",
  "       flash image run [-e KEY=VALUE | -e KEY]... IMAGE [ARG...]",
  "",
  "  build  as docker build: buildah bud --format docker --isolation chroot (podman/docker build elsewhere)",
  "  run    as docker run: the image's ENTRYPOINT with ARGs or its CMD, on this machine's network; Ctrl-C and",
  "         SIGTERM reach the container's processes, and the working container is removed at the end",
  "",
  "FLASH_CONTAINER_TOOL picks buildah, podman or docker; FLASH_CONTAINER_STORAGE gives buildah/podman a vfs",
  "storage folder of their own.",
].join("\n");

class UsageError extends Error {}

/** `flash image <build|run> ...` */
export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    if (sub === "build") return await build(rest);
    if (sub === "run") return await runImage(rest);
    if (sub === "--help" || sub === "-h" || sub === "help") {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    throw new UsageError(sub ? `unknown subcommand "${sub}"` : "missing subcommand");
  } catch (err) {
    if (
      err instanceof UsageError ||
      err instanceof ConfigError ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(`flash image: ${(err as Error).message}\n${USAGE}\n`);
      return 1;
    }
    throw err;
  }
}

function tool(): ContainerTool {
  return findContainerTool(containerOptions(parseConfig([], process.env).config));
}

async function build(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { tag: { type: "string", short: "t" }, file: { type: "string", short: "f" } },
  });
  if (positionals.length > 1) throw new UsageError(`one build directory, got ${positionals.join(" ")}`);
  const dir = resolve(positionals[0] ?? ".");
  const t = tool();
  const argv = [t.name === "buildah" ? "bud" : "build"];
  // Docker format keeps HEALTHCHECK (OCI has none); chroot isolation runs RUN steps without a runtime.
  if (t.name !== "docker") argv.push("--format", "docker", "--isolation", "chroot");
  if (values.file) argv.push("-f", resolve(values.file));
  if (values.tag) argv.push("-t", values.tag);
  argv.push(dir);
  await runTool(t, argv, { onLine: (line) => process.stdout.write(`${line}\n`) });
  return 0;
}

/** Splits `[-e K=V]... IMAGE [ARG...]`: every word after the image belongs to the container, as with docker run. */
function runArgs(args: string[]): { env: string[]; image: string; rest: string[] } {
  const env: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "-e" || arg === "--env") {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`${arg} needs KEY=VALUE or KEY`);
      env.push(value);
    } else if (arg.startsWith("--env=")) {
      env.push(arg.slice("--env=".length));
    } else if (arg.startsWith("-")) {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      return { env, image: arg, rest: args.slice(i + 1) };
    }
  }
  throw new UsageError("missing IMAGE");
}

/** KEY=VALUE as given; a bare KEY takes this process's value, as docker run -e KEY does. */
function envFlags(env: string[]): string[] {
  return env.flatMap((entry) => {
    if (entry.includes("=")) return ["-e", entry];
    const value = process.env[entry];
    return value === undefined ? [] : ["-e", `${entry}=${value}`];
  });
}

async function runImage(args: string[]): Promise<number> {
  const { env, image, rest } = runArgs(args);
  const t = tool();
  let container: string | undefined;
  let argv: string[];
  if (t.name === "buildah") {
    const command = await imageCommand(t, image, rest.length > 0 ? rest : undefined);
    container = `flash-run-${process.pid}`;
    await runTool(t, ["rm", container]).catch(() => undefined);
    await runTool(t, ["from", "--name", container, image]);
    // tini is not PID 1 under buildah run: it says so unless it is told it is a subreaper.
    argv = toolArgv(t, [
      "run",
      "--isolation",
      "chroot",
      "-e",
      "TINI_SUBREAPER=1",
      ...envFlags(env),
      container,
      "--",
      ...command,
    ]);
  } else {
    argv = toolArgv(t, ["run", "--rm", "--network", "host", ...envFlags(env), image, ...rest]);
  }
  const [command, ...commandArgs] = argv;
  const child = spawn(command!, commandArgs, { stdio: "inherit" });
  // buildah run does not pass signals on, and dies of them: they go to the container's first process by pid.
  const forward = (name: NodeJS.Signals) => {
    const entry = t.name === "buildah" ? containerEntry(child) : undefined;
    if (entry === undefined) child.kill(name);
    else process.kill(entry, name);
  };
  process.on("SIGINT", forward);
  process.on("SIGTERM", forward);
  const [code, by] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
    child.once("close", (c, s) => done([c, s])),
  );
  process.off("SIGINT", forward);
  process.off("SIGTERM", forward);
  if (container) await runTool(t, ["rm", container]).catch(() => undefined);
  return code ?? 128 + (by === "SIGKILL" ? 9 : by === "SIGINT" ? 2 : 15);
}
