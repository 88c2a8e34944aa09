// `flash image build|run`: `docker build` and `docker run` habits without a Docker engine. With buildah, build
// keeps the Docker format (HEALTHCHECK survives) under chroot isolation, and run starts the image's ENTRYPOINT
// and CMD and passes Ctrl-C and SIGTERM to every process of the container; podman and docker run as they are.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CUDA_FLAVORS, type CudaFlavor } from "../app/settings.js";
import { configEnvFlags, envNames } from "../containers/credentials.js";
import { CONTAINER_OPTIONS, containerToolOptions } from "../containers/options.js";
import {
  type ContainerTool,
  findContainerTool,
  imageCommand,
  runTool,
  toolArgv,
} from "../containers/tool.js";
import { isFlashError } from "../flash-error.js";
import { ConfigError, readOptions, text, toggle } from "../options/index.js";
import { containerEntry } from "../platform/workers/terminate.js";
import {
  baseHint,
  buildRuntimeImage,
  cudaKind,
  fromOf,
  ImageError,
  imageExists,
  PACKAGE_ROOT,
  pullRuntimeImage,
  RUNTIME_IMAGES,
  type RuntimeKind,
  runtimeDockerfile,
  STANDIN_IMAGE,
} from "../toolkit/image/build.js";
import { npmrcSecret } from "../toolkit/image/npmrc.js";
import type { CommandSpec } from "./options.js";

export const spec = {
  name: "image",
  args: "build [DIR] | run IMAGE [ARG...] | base [--cpu|--cuda|--all] [--flavor F] [--standin|--build]",
  summary: "docker build / docker run with buildah (or podman, docker): ENTRYPOINT, CMD and signals kept",
  // Help only: each subcommand reads its own flags as docker's CLI does (node:util's parseArgs, -e repeated).
  options: {
    tag: { flags: ["--tag", "-t"], parse: text, value: "TAG", help: "build: the image's name" },
    file: {
      flags: ["--file", "-f"],
      parse: text,
      value: "FILE",
      help: "build: the Dockerfile (default DIR/Dockerfile)",
    },
    env: {
      flags: ["--env", "-e"],
      parse: text,
      value: "KEY=VALUE",
      help: "run: an environment variable (KEY alone: this one's)",
    },
    cpu: toggle(["--cpu"], "base: build flash-worker:cpu only (default: both)"),
    cuda: toggle(["--cuda"], "base: build flash-worker:cuda only"),
    all: toggle(["--all"], "base: build both (the default)"),
    flavor: {
      flags: ["--flavor"],
      parse: text,
      value: "F",
      help: "base: the CUDA flavor: base (flash-worker:cuda, the default), runtime (:cuda-runtime) or cudnn (:cuda-cudnn)",
    },
    standin: toggle(
      ["--standin"],
      "base: build on a local stand-in for node:24-bookworm-slim (Debian + this node), for hosts without Docker Hub",
    ),
    build: toggle(["--build"], "base: build here even when this version's published images can be pulled"),
  },
} satisfies CommandSpec;

const USAGE = [
  "usage: flash image build [-t TAG] [-f Dockerfile] [DIR]",
  "       flash image run [-e KEY=VALUE | -e KEY]... IMAGE [ARG...]",
  "       flash image base [--cpu | --cuda | --all] [--flavor base|runtime|cudnn] [--standin | --build]",
  "",
  "  build  as docker build: buildah bud --format docker --isolation chroot (podman/docker build elsewhere)",
  "  run    as docker run: the image's ENTRYPOINT with ARGs or its CMD, on this machine's network; Ctrl-C and",
  "         SIGTERM reach the container's processes, and the working container is removed at the end",
  "  base   makes the runtime images flash-worker:cpu and flash-worker:cuda (FROM in your Dockerfile): pulls this",
  "         version's release (FLASH_IMAGE_REPO, default ghcr.io/flash-worker/flash-worker, :<version>-cpu...) and",
  "         names it so; when it cannot be pulled, or with --build or --standin, builds it from this package's",
  "         Dockerfile.cpu/.gpu into the local storage; on node:24-bookworm-slim from Docker Hub, or",
  "         FLASH_NODE_BASE_IMAGE, or with --standin on a Debian bookworm rootfs (debootstrap, cached in",
  "         FLASH_IMAGE_CACHE) plus this machine's node and npm, for hosts without Docker Hub (needs buildah, root);",
  "         --flavor picks the CUDA image: base (flash-worker:cuda, nvidia/cuda's base: the host driver does the",
  "         rest), runtime (flash-worker:cuda-runtime: cuBLAS, cuFFT, NCCL...) or cudnn (flash-worker:cuda-cudnn)",
  "",
  "build passes this machine's npm registry, CA and proxy as the build secret npmrc:",
  "  RUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci --omit=dev",
  "",
  "FLASH_CONTAINER_TOOL picks buildah, podman or docker; FLASH_CONTAINER_STORAGE gives buildah/podman a vfs",
  "storage folder of their own.",
].join("\n");

/** A wrong subcommand, argument or option: printed with the usage, as a bad flag is. */
class UsageError extends ConfigError {}

/** `flash image <build|run> ...` */
export async function run(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  try {
    if (sub === "build") return await build(rest);
    if (sub === "run") return await runImage(rest);
    if (sub === "base") return await base(rest);
    if (sub === "--help" || sub === "-h" || sub === "help") {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    throw new UsageError(sub ? `unknown subcommand "${sub}"` : "missing subcommand");
  } catch (err) {
    if (isFlashError(err, "IMAGE_FAILED", "CONTAINER_TOOL_MISSING")) {
      process.stderr.write(`flash image: ${err.message}\n`);
      return 1;
    }
    if (
      isFlashError(err, "CONFIG_INVALID") ||
      (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
    ) {
      process.stderr.write(`flash image: ${(err as Error).message}\n${USAGE}\n`);
      return 1;
    }
    throw err;
  }
}

function tool(): ContainerTool {
  return findContainerTool(containerToolOptions(readOptions(CONTAINER_OPTIONS, []).values));
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
  // The Dockerfile's `RUN --mount=type=secret,id=npmrc,target=/root/.npmrc npm ci` sees npm's setup here.
  const npmrc = npmrcSecret(dir);
  argv.push(...npmrc.args, dir);
  try {
    await runTool(t, argv, { onLine: (line) => process.stdout.write(`${line}\n`) });
  } catch (err) {
    // FROM flash-worker:cpu before the base images were built here: say how to build them.
    const file = values.file ? resolve(values.file) : join(dir, "Dockerfile");
    const base = existsSync(file) ? fromOf(readFileSync(file, "utf8")) : undefined;
    const hint = base ? baseHint(err, base) : "";
    if (hint) throw new ImageError(`Building ${values.tag ?? dir} failed.${hint}`);
    throw err;
  } finally {
    npmrc.remove();
  }
  return 0;
}

async function base(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      cpu: { type: "boolean" },
      cuda: { type: "boolean" },
      all: { type: "boolean" },
      standin: { type: "boolean" },
      build: { type: "boolean" },
      flavor: { type: "string" },
    },
  });
  if (positionals.length > 0) throw new UsageError(`unexpected ${positionals.join(" ")}`);
  const flavor = values.flavor ?? "base";
  if (!(CUDA_FLAVORS as readonly string[]).includes(flavor)) {
    throw new UsageError(`--flavor ${flavor}: expected one of ${CUDA_FLAVORS.join(", ")}`);
  }
  const cuda = cudaKind(flavor as CudaFlavor);
  const kinds: RuntimeKind[] =
    values.cpu && !values.cuda && !values.all
      ? ["cpu"]
      : values.cuda && !values.cpu && !values.all
        ? [cuda]
        : ["cpu", cuda];
  const containers = readOptions(CONTAINER_OPTIONS, []).values;
  const t = findContainerTool(containerToolOptions(containers));
  const show = (line: string) => process.stdout.write(`${line}\n`);
  const nodeBase = values.standin
    ? await standinBase(t, containers.containerStorage)
    : containers.nodeBaseImage;
  for (const kind of kinds) {
    if (!values.build && !values.standin) {
      const pull = await pullRuntimeImage(t, kind, containers.imageRepo, show);
      if ("pulled" in pull) {
        show(
          `✓ ${RUNTIME_IMAGES[kind]} pulled from ${pull.pulled} (FROM flash-worker:${kind} in your Dockerfile)`,
        );
        continue;
      }
      show(`${pull.failed} could not be pulled (${pull.reason}): building it here`);
    }
    show(
      `Building ${RUNTIME_IMAGES[kind]} from ${runtimeDockerfile(kind)} on ${nodeBase ?? "node:24-bookworm-slim"}`,
    );
    const image = await buildRuntimeImage({
      tool: t,
      kind,
      show,
      nodeBaseImage: nodeBase,
    });
    show(`✓ ${image} (FROM flash-worker:${kind} in your Dockerfile)`);
  }
  return 0;
}

/**
 * The stand-in node base in the tool's storage, made by the package's docker/build.sh --standin-only when it is
 * not there yet: in FLASH_CONTAINER_STORAGE directly, else in a scratch storage copied into the default one.
 */
async function standinBase(t: ContainerTool, storage: string | undefined): Promise<string> {
  if (await imageExists(t, STANDIN_IMAGE)) return STANDIN_IMAGE;
  if (t.name !== "buildah") {
    throw new ImageError(
      `--standin needs buildah (it makes the stand-in with docker/build.sh); found ${t.name}. Install buildah and debootstrap, or set FLASH_NODE_BASE_IMAGE to a node image you have.`,
    );
  }
  const work = storage ?? mkdtempSync(join("/var/tmp", "flash-standin-"));
  try {
    const script = join(PACKAGE_ROOT, "docker", "build.sh");
    const code = await new Promise<number | null>((done) =>
      spawn("bash", [script, "--standin-only", "--no-tsc"], {
        stdio: ["ignore", "inherit", "inherit"],
        env: { ...process.env, FLASH_IMAGE_WORK: work },
      }).once("close", done),
    );
    if (code !== 0)
      throw new ImageError(
        `Making the stand-in base with ${script} --standin-only failed (exit ${code}); its output is above.`,
      );
    if (storage === undefined) {
      // The scratch storage and the default one are separate stores: the image crosses through an archive.
      const scratch = findContainerTool({ tool: "buildah", storage: work });
      const archive = join(work, "standin.oci.tar");
      await runTool(scratch, ["push", STANDIN_IMAGE, `oci-archive:${archive}`]);
      const { stdout } = await runTool(t, ["pull", "--quiet", `oci-archive:${archive}`]);
      await runTool(t, ["tag", stdout.trim().split("\n").at(-1) ?? "", STANDIN_IMAGE]);
    }
  } finally {
    if (storage === undefined) {
      await runTool(findContainerTool({ tool: "buildah", storage: work }), ["rm", "--all"]).catch(
        () => undefined,
      );
      rmSync(work, { recursive: true, force: true });
    }
  }
  return STANDIN_IMAGE;
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
function containerEnv(env: string[]): Record<string, string> {
  return Object.fromEntries(
    env.flatMap((entry) => {
      const at = entry.indexOf("=");
      if (at !== -1) return [[entry.slice(0, at), entry.slice(at + 1)]];
      const value = process.env[entry];
      return value === undefined ? [] : [[entry, value]];
    }),
  );
}

async function runImage(args: string[]): Promise<number> {
  const { env, image, rest } = runArgs(args);
  const values = containerEnv(env);
  const t = tool();
  let container: string | undefined;
  let argv: string[];
  // No value goes in an argv (`ps` shows those to every user): buildah config and docker/podman run read them from
  // their own environment.
  if (t.name === "buildah") {
    const command = await imageCommand(t, image, rest.length > 0 ? rest : undefined);
    container = `flash-run-${process.pid}`;
    await runTool(t, ["rm", container]).catch(() => undefined);
    await runTool(t, ["from", "--name", container, image]);
    if (Object.keys(values).length > 0) {
      await runTool(t, ["config", ...configEnvFlags(values), container], {
        env: { ...process.env, ...values },
      });
    }
    // tini is not PID 1 under buildah run: it says so unless it is told it is a subreaper.
    argv = toolArgv(t, [
      "run",
      "--isolation",
      "chroot",
      "-e",
      "TINI_SUBREAPER=1",
      container,
      "--",
      ...command,
    ]);
  } else {
    argv = toolArgv(t, ["run", "--rm", "--network", "host", ...envNames(values), image, ...rest]);
  }
  const [command, ...commandArgs] = argv;
  const child = spawn(command!, commandArgs, { stdio: "inherit", env: { ...process.env, ...values } });
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
