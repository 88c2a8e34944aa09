// The app's image: the project's own Dockerfile, or one generated FROM the runtime image holding exactly what
// `flash build` ships; the runtime image built from the package's Dockerfile.cpu/.gpu when it is nowhere to be
// had; then pushed. Every step's output is shown as it comes (builds and pushes take minutes).

import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { extract } from "tar";
import { checkArtifact } from "../build/archive.js";
import { type ContainerTool, ContainerToolError, isLoopbackRegistry, runTool } from "../containers/tool.js";
import { FlashError } from "../errors.js";
import type { Logger } from "../log/index.js";

/** The runtime images, as the Dockerfiles and docker/build.sh name them. */
export const RUNTIME_IMAGES = {
  cpu: "localhost/flash-worker:cpu",
  cuda: "localhost/flash-worker:cuda",
} as const;
/** The flash-worker package running this command: its Dockerfile.cpu/.gpu build the runtime images. */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Tool output lines that mark progress: build steps, commits, layer copies, the manifest write. */
const PROGRESS =
  /^(STEP \d+|COMMIT|Step \d+|Copying (blob|config)|Writing manifest|Storing signatures|Getting image source|Successfully|#\d+ \[|[0-9a-f]{12}: (Pushed|Layer already exists|Pushing))/;

/** The image could not be built or pushed; the message says which step and shows the tool's last lines. */
export class ImageError extends FlashError {
  readonly code = "IMAGE_FAILED";
  override name = "ImageError";
}

export interface ImageOptions {
  tool: ContainerTool;
  /** Project root. */
  root: string;
  /** `flash build`'s artifact: what the generated image holds. */
  artifact: string;
  /** REGISTRY/NAME:TAG. */
  image: string;
  /** The entry file the generated image runs by default. */
  entry: string;
  kind: "cpu" | "cuda";
  /** FROM this instead of the runtime image. */
  baseImage?: string;
  /** Node base for building the runtime image here (its Dockerfiles' BASE build argument). */
  nodeBaseImage?: string;
  /** Default: off for a registry on loopback, on elsewhere. */
  tlsVerify?: boolean;
  log: Logger;
}

export interface BuiltImage {
  image: string;
  /** Manifest digest in the registry (sha256:…). */
  digest: string;
  /** The image's layers, uncompressed. */
  bytes: number;
  /** The project's own Dockerfile was used (its CMD stands; no container args are set). */
  ownDockerfile: boolean;
  buildMs: number;
  pushMs: number;
}

/** A reference's registry-less form is invalid to push: the image must name where it goes. */
export function checkImageName(image: string): void {
  const [first] = image.split("/");
  const hasRegistry = image.includes("/") && first !== undefined && /[.:]|^localhost$/.test(first);
  if (!hasRegistry || !/^[a-z0-9._:/@\-[\]]+$/i.test(image)) {
    throw new ImageError(
      `--image ${image}: expected REGISTRY/NAME:TAG, e.g. docker.io/you/app:1, ghcr.io/you/app:1 or 127.0.0.1:5000/app:1`,
    );
  }
}

export async function buildAndPush(options: ImageOptions): Promise<BuiltImage> {
  checkImageName(options.image);
  const { tool, log } = options;
  // Steps and per-layer push lines as people expect them; the rest (a RUN step's own output) at DEBUG.
  const show = (line: string) => {
    if (!line.trim()) return;
    if (PROGRESS.test(line)) log.info(line);
    else log.debug(line);
  };
  const own = join(options.root, "Dockerfile");
  const ownDockerfile = existsSync(own);
  const started = Date.now();
  let dockerfile: string;
  let context: string;
  let base: string;
  if (ownDockerfile) {
    dockerfile = own;
    context = options.root;
    base = fromOf(readFileSync(own, "utf8")) ?? "";
    log.info(`Building ${options.image} from the project's Dockerfile`);
  } else {
    base = options.baseImage ?? RUNTIME_IMAGES[options.kind];
    context = join(options.root, ".flash", "image");
    dockerfile = join(options.root, ".flash", "Dockerfile");
    rmSync(context, { recursive: true, force: true });
    mkdirSync(context, { recursive: true });
    // Exactly what `flash build` ships: the sources, the manifest and node_modules.
    checkArtifact(options.artifact, relative(options.root, options.artifact));
    await extract({ file: options.artifact, cwd: context, strict: true });
    writeFileSync(dockerfile, generatedDockerfile(base, options.entry));
    log.info(
      `Building ${options.image} FROM ${base}: the app as flash build ships it (.flash/artifact.tar.gz)`,
    );
  }
  const runtimeBase = Object.values(RUNTIME_IMAGES).find((name) => sameImage(name, base));
  if (runtimeBase) await ensureRuntimeImage(options, runtimeBase, show);

  const tlsVerify = options.tlsVerify ?? !isLoopbackRegistry(options.image);
  const buildArgs = tool.name === "docker" ? [] : ["--format", "docker", "--isolation", "chroot"];
  try {
    await runTool(
      tool,
      [
        tool.name === "buildah" ? "bud" : "build",
        ...buildArgs,
        ...(runtimeBase && tool.name !== "docker" ? ["--pull=never"] : []),
        "-f",
        dockerfile,
        "-t",
        options.image,
        context,
      ],
      { onLine: show },
    );
  } catch (err) {
    throw new ImageError(`Building ${options.image} failed: ${detail(err)}`);
  }
  const buildMs = Date.now() - started;

  const pushStarted = Date.now();
  const digestFile = join(options.root, ".flash", "image.digest");
  rmSync(digestFile, { force: true });
  log.info(`Pushing ${options.image}${tlsVerify ? "" : " (TLS verification off)"}`);
  try {
    if (tool.name === "docker") {
      await runTool(tool, ["push", options.image], { onLine: show });
    } else {
      await runTool(
        tool,
        [
          "push",
          `--tls-verify=${tlsVerify}`,
          "--digestfile",
          digestFile,
          options.image,
          `docker://${options.image}`,
        ],
        { onLine: show },
      );
    }
  } catch (err) {
    throw new ImageError(
      `Pushing ${options.image} to ${options.image.split("/")[0]} failed: ${detail(err)}${hint(err)}`,
    );
  }
  const pushMs = Date.now() - pushStarted;
  const inspected = await inspectImage(tool, options.image);
  const digest = existsSync(digestFile) ? readFileSync(digestFile, "utf8").trim() : inspected.digest;
  return { image: options.image, digest, bytes: inspected.bytes, ownDockerfile, buildMs, pushMs };
}

/** The generated Dockerfile: the app in /app, the entry file as the default command. */
export function generatedDockerfile(base: string, entry: string): string {
  return [
    "# Generated by flash deploy: the app as `flash build` ships it, on the flash-worker runtime image.",
    `FROM ${base}`,
    "WORKDIR /app",
    "COPY . /app/",
    `CMD ${JSON.stringify([entry])}`,
    "",
  ].join("\n");
}

/** The runtime image in local storage, else pulled, else built from the package's own Dockerfile. */
async function ensureRuntimeImage(
  options: ImageOptions,
  image: string,
  show: (line: string) => void,
): Promise<void> {
  const { tool, log } = options;
  if (await imageExists(tool, image)) return;
  try {
    await runTool(tool, ["pull", image], { onLine: show });
    return;
  } catch {
    // Not published anywhere reachable: built below.
  }
  const kind = image.endsWith(":cuda") ? "gpu" : "cpu";
  const dockerfile = join(PACKAGE_ROOT, `Dockerfile.${kind}`);
  if (!existsSync(dockerfile) || !existsSync(join(PACKAGE_ROOT, "dist", "cli", "main.js"))) {
    throw new ImageError(
      `The runtime image ${image} is not in local storage or a reachable registry, and this flash-worker (${PACKAGE_ROOT}) has no Dockerfile.${kind} and dist/ to build it from. Build it from a flash-worker checkout (docker/build.sh), or pass --base-image.`,
    );
  }
  const args: string[] = [];
  // npm in the build trusts what npm here trusts (a proxy's CA), as a build secret that stays out of the image.
  const ca = npmCaFile();
  if (ca) args.push("--secret", `id=npm_ca,src=${ca}`);
  if (options.nodeBaseImage) {
    args.push("--build-arg", `BASE=${options.nodeBaseImage}`);
    if (kind === "gpu") args.push("--build-arg", `NODE_IMAGE=${options.nodeBaseImage}`);
  }
  log.info(
    `The runtime image ${image} is in neither local storage nor a reachable registry: building it first from ${dockerfile}${options.nodeBaseImage ? ` on ${options.nodeBaseImage}` : ""}`,
  );
  try {
    await runTool(
      tool,
      [
        tool.name === "buildah" ? "bud" : "build",
        ...(tool.name === "docker" ? [] : ["--format", "docker", "--isolation", "chroot"]),
        ...args,
        "-f",
        dockerfile,
        "-t",
        image,
        PACKAGE_ROOT,
      ],
      { onLine: show },
    );
  } catch (err) {
    throw new ImageError(`Building the runtime image ${image} from ${dockerfile} failed: ${detail(err)}`);
  }
}

/** NODE_EXTRA_CA_CERTS, else npm's cafile setting, when it names a file. */
function npmCaFile(): string | undefined {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const npm = spawnSync("npm", ["config", "get", "cafile"], { encoding: "utf8", timeout: 15_000 });
  const file = npm.stdout?.trim();
  return file && file !== "null" && file !== "undefined" && existsSync(file) ? file : undefined;
}

async function imageExists(tool: ContainerTool, image: string): Promise<boolean> {
  try {
    await runTool(
      tool,
      tool.name === "docker" ? ["image", "inspect", image] : ["inspect", "--type", "image", image],
    );
    return true;
  } catch {
    return false;
  }
}

/** Digest and uncompressed size of a local image. */
async function inspectImage(tool: ContainerTool, image: string): Promise<{ digest: string; bytes: number }> {
  try {
    if (tool.name === "docker") {
      const { stdout } = await runTool(tool, ["image", "inspect", "--format", "{{json .}}", image]);
      const info = JSON.parse(stdout) as { Size?: number; RepoDigests?: string[] };
      return { digest: info.RepoDigests?.[0]?.split("@")[1] ?? "", bytes: info.Size ?? 0 };
    }
    const { stdout } = await runTool(tool, ["inspect", "--type", "image", image]);
    const info = JSON.parse(stdout) as { FromImageDigest?: string; Manifest?: string };
    const manifest = JSON.parse(info.Manifest ?? "{}") as { layers?: { size?: number }[] };
    const bytes = (manifest.layers ?? []).reduce((sum, layer) => sum + (layer.size ?? 0), 0);
    return { digest: info.FromImageDigest ?? "", bytes };
  } catch {
    return { digest: "", bytes: 0 };
  }
}

/** The last FROM of a Dockerfile (the image it ends up on), without a build stage name. */
function fromOf(text: string): string | undefined {
  const froms = [...text.matchAll(/^\s*FROM\s+(?:--\S+\s+)*(\S+)/gim)].map((m) => m[1]!);
  return froms.at(-1);
}

/** `flash-worker:cpu` and `localhost/flash-worker:cpu` are one image. */
function sameImage(a: string, b: string): boolean {
  const strip = (name: string) => name.replace(/^localhost\//, "");
  return strip(a) === strip(b);
}

function detail(err: unknown): string {
  if (err instanceof ContainerToolError) return `${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** What to try for the usual push failures. */
function hint(err: unknown): string {
  const text = err instanceof ContainerToolError ? err.output : String(err);
  if (/connection refused|no such host|i\/o timeout|dial tcp/i.test(text)) {
    return "\n  The registry is not reachable: check the name and port, or start it.";
  }
  if (/unauthorized|authentication required|denied/i.test(text)) {
    return "\n  The registry refused the credentials: log in (buildah login / podman login / docker login), or set REGISTRY_AUTH_FILE.";
  }
  if (/http response to https client|certificate/i.test(text)) {
    return "\n  A registry without TLS: pass --tls-verify=false.";
  }
  return "";
}
