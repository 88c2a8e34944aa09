// Deployed endpoints' workers on the local platform run from their image: pulled from its registry, then each
// worker a container run (buildah run, chroot isolation, this machine's network; podman/docker run elsewhere).
// No secret goes in a tool's argv: the registry login through an auth file, the workers' env through the tool's env.
import { buildahRunWithEnv, envNames, withAuthFile } from "../../containers/credentials.js";
import {
  type ContainerTool,
  type ContainerToolOptions,
  findContainerTool,
  imageCommand,
  isLoopbackRegistry,
  runTool,
  toolArgv,
} from "../../containers/tool.js";
import type { Logger } from "../../log/index.js";
import type { LaunchCommand, WorkerLaunch } from "../state/endpoint.js";
import type { ImageRequest } from "../state/rest-workers.js";

/** One image to run (the state asks for it as an ImageRequest). */
export type PullRequest = ImageRequest;

/** An image ready to run: its container, and the argv of one worker run in it. */
export interface PreparedImage {
  image: string;
  imageId: string;
  container?: string;
  launch: WorkerLaunch;
}

/** Splits container args as a shell would split plain words and quoted strings (no expansion). */
export function splitArgs(args: string): string[] {
  const words = args.match(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g) ?? [];
  return words.map((word) =>
    word.replace(/"([^"]*)"|'([^']*)'/g, (_m, a?: string, b?: string) => a ?? b ?? ""),
  );
}

export class ContainerRuntime {
  private tool: ContainerTool | undefined;
  private readonly containers = new Set<string>();

  constructor(
    private readonly options: ContainerToolOptions,
    private readonly log: Logger,
  ) {}

  /** The tool, found on first use; throws NoContainerToolError (saying what to install) when there is none. */
  get containerTool(): ContainerTool {
    this.tool ??= findContainerTool(this.options);
    return this.tool;
  }

  /** Pulls the image (always: a tag may have moved) and makes the container its workers run in. */
  async prepare(request: PullRequest): Promise<PreparedImage> {
    const tool = this.containerTool;
    this.log.info(`Pulling ${request.image}`);
    const imageId = await this.pull(tool, request);
    const args = request.args ? splitArgs(request.args) : undefined;
    if (tool.name !== "buildah") {
      // podman and docker run the image itself: its ENTRYPOINT, and CMD or the args.
      return { image: request.image, imageId, launch: (env) => runImage(tool, imageId, args, env) };
    }
    const command = await imageCommand(tool, imageId, args);
    await runTool(tool, ["rm", request.name]).catch(() => undefined);
    const created = await runTool(tool, ["from", "--pull=never", "--name", request.name, imageId]);
    const container = created.stdout.trim().split("\n").at(-1) ?? request.name;
    this.containers.add(container);
    this.log.info(`Image ${request.image} (${imageId.slice(0, 12)}) ready in container ${container}`);
    return {
      image: request.image,
      imageId,
      container,
      launch: (env) => runContainer(tool, container, command, env),
    };
  }

  /** `pull`, the login (if any) in an auth file; resolves to the image id the tool printed last. */
  private async pull(tool: ContainerTool, request: PullRequest): Promise<string> {
    const pullArgs = ["pull"];
    if (tool.name === "buildah") pullArgs.push("--policy", "always");
    if (tool.name !== "docker" && isLoopbackRegistry(request.image)) pullArgs.push("--tls-verify=false");
    const pull = (extra: string[]) => runTool(tool, [...pullArgs, ...extra, request.image]);
    // docker pull takes no login: docker login's stored one is used.
    const pulled =
      request.creds && tool.name !== "docker"
        ? await withAuthFile(request.image, request.creds, (file) => pull(["--authfile", file]))
        : await pull([]);
    return pulled.stdout.trim().split("\n").at(-1)?.trim() || request.image;
  }

  /** Removes a working container (its workers have exited). */
  async remove(container: string | undefined): Promise<void> {
    if (!container || !this.containers.delete(container)) return;
    await runTool(this.containerTool, ["rm", container]).catch((err: Error) =>
      this.log.warn(`Could not remove container ${container}: ${err.message}`),
    );
  }

  /** Removes every working container made here. */
  async close(): Promise<void> {
    await Promise.all([...this.containers].map((c) => this.remove(c)));
  }
}

/** podman or docker run of the image with `env`: `-e NAME` flags, the values in the tool's own environment. */
function runImage(
  tool: ContainerTool,
  imageId: string,
  args: string[] | undefined,
  env: Record<string, string>,
): LaunchCommand {
  return {
    argv: toolArgv(tool, ["run", "--rm", "--network", "host", ...envNames(env), imageId, ...(args ?? [])]),
    env,
  };
}

/** The worker's id differs between runs of one container (and is no secret): it alone goes on buildah run's line. */
const PER_RUN = ["RUNPOD_POD_ID"];

/** buildah run of the working container with `env`, set by buildah config from its environment (credentials.ts). */
function runContainer(
  tool: ContainerTool,
  container: string,
  command: string[],
  env: Record<string, string>,
): LaunchCommand {
  return buildahRunWithEnv(tool, container, env, PER_RUN, (envFlags) => [
    "run",
    "--isolation",
    "chroot",
    // tini is not PID 1 under buildah run: it says so unless it is told it is a subreaper.
    "-e",
    "TINI_SUBREAPER=1",
    ...envFlags,
    container,
    "--",
    ...command,
  ]);
}
