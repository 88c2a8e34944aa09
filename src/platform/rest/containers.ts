// Deployed endpoints' workers on the local platform run from their image: pulled from its registry, then each
// worker a container run (buildah run, chroot isolation, this machine's network; podman/docker run elsewhere).
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
import type { WorkerLaunch } from "../state/endpoint.js";
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
    const pullArgs = ["pull"];
    if (tool.name === "buildah") pullArgs.push("--policy", "always");
    if (tool.name !== "docker" && isLoopbackRegistry(request.image)) pullArgs.push("--tls-verify=false");
    if (request.creds && tool.name !== "docker") {
      pullArgs.push("--creds", `${request.creds.username}:${request.creds.password}`);
    }
    pullArgs.push(request.image);
    this.log.info(`Pulling ${request.image}`);
    const pulled = await runTool(tool, pullArgs);
    const imageId = pulled.stdout.trim().split("\n").at(-1)?.trim() || request.image;
    const args = request.args ? splitArgs(request.args) : undefined;
    if (tool.name !== "buildah") {
      // podman and docker run the image itself: its ENTRYPOINT, and CMD or the args.
      return {
        image: request.image,
        imageId,
        launch: (env) =>
          toolArgv(tool, [
            "run",
            "--rm",
            "--network",
            "host",
            ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
            imageId,
            ...(args ?? []),
          ]),
      };
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
      launch: (env) =>
        toolArgv(tool, [
          "run",
          "--isolation",
          "chroot",
          // tini is not PID 1 under buildah run: it says so unless it is told it is a subreaper.
          "-e",
          "TINI_SUBREAPER=1",
          ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
          container,
          "--",
          ...command,
        ]),
    };
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
