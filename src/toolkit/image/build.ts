// The app's image: the project's own Dockerfile, or one generated FROM the runtime image holding exactly what
// `flash build` ships; the runtime image built from the package's Dockerfile.cpu/.gpu when it is nowhere to be
// had; then pushed. Every step's output is shown as it comes (builds and pushes take minutes).

import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ignore from "ignore";
import { extract } from "tar";
import type { CudaFlavor } from "../../app/settings.js";
import {
  type ContainerTool,
  isContainerToolError,
  isLoopbackRegistry,
  runTool,
} from "../../containers/tool.js";
import { FlashError } from "../../flash-error.js";
import type { Logger } from "../../log/index.js";
import { VERSION } from "../../version.js";
import { checkArtifact, sourceDateEpoch } from "../bundle/archive.js";
import { credentialDockerignore, credentialRules } from "../bundle/credentials.js";
import { INSTALL_DIR } from "../bundle/dependencies.js";
import { collectFiles, readLink } from "../bundle/files.js";
import { MANIFEST_NAME, type ManifestEndpoint } from "../bundle/manifest.js";
import { NPMRC_SECRET, npmrcSecret } from "./npmrc.js";

/** The runtime images, as the Dockerfiles and docker/build.sh name them; :cuda is the CUDA `base` flavor. */
export const RUNTIME_IMAGES = {
  cpu: "localhost/flash-worker:cpu",
  cuda: "localhost/flash-worker:cuda",
  "cuda-runtime": "localhost/flash-worker:cuda-runtime",
  "cuda-cudnn": "localhost/flash-worker:cuda-cudnn",
} as const;
/** One of the runtime images: the CPU one or a CUDA flavor. */
export type RuntimeKind = keyof typeof RUNTIME_IMAGES;

/** Each CUDA flavor's runtime image and the nvidia/cuda tag flavor Dockerfile.gpu's CUDA_FLAVOR takes. */
const CUDA_KINDS = {
  base: { kind: "cuda", nvidia: "base" },
  runtime: { kind: "cuda-runtime", nvidia: "runtime" },
  cudnn: { kind: "cuda-cudnn", nvidia: "cudnn-runtime" },
} as const satisfies Record<CudaFlavor, { kind: RuntimeKind; nvidia: string }>;

/** The runtime image for a CUDA flavor: flash-worker:cuda (base), :cuda-runtime or :cuda-cudnn. */
export function cudaKind(flavor: CudaFlavor = "base"): RuntimeKind {
  return CUDA_KINDS[flavor].kind;
}

/**
 * The runtime image an app's generated image is built on (one image serves every endpoint): cpu when every endpoint
 * runs on CPUs, else the heaviest CUDA flavor any endpoint asks for (base < runtime < cudnn).
 */
export function appRuntimeKind(
  endpoints: readonly Pick<ManifestEndpoint, "cpu" | "cudaFlavor">[],
): RuntimeKind {
  if (endpoints.every((e) => e.cpu)) return "cpu";
  const order = Object.keys(CUDA_KINDS) as CudaFlavor[];
  const heaviest = Math.max(...endpoints.map((e) => order.indexOf(e.cudaFlavor ?? "base")));
  return cudaKind(order[heaviest]);
}

/** The nvidia/cuda flavor under a CUDA runtime image (Dockerfile.gpu's CUDA_FLAVOR); undefined for cpu. */
export function nvidiaFlavor(kind: RuntimeKind): string | undefined {
  return Object.values(CUDA_KINDS).find((c) => c.kind === kind)?.nvidia;
}
/** The flash-worker package running this command: its Dockerfile.cpu/.gpu build the runtime images. */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

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
  kind: RuntimeKind;
  /** FROM this instead of the runtime image. */
  baseImage?: string;
  /** Node base for building the runtime image here (its Dockerfiles' BASE build argument). */
  nodeBaseImage?: string;
  /** Where the runtime image is pulled from before it is built here (FLASH_IMAGE_REPO; default PUBLISHED_REPO). */
  imageRepo?: string;
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
  /** The project's own Dockerfile was used (its CMD stands unless an endpoint's args name its file). */
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
  let ignoreArgs: string[] = [];
  if (ownDockerfile) {
    context = options.root;
    base = fromOf(readFileSync(own, "utf8")) ?? "";
    log.info(`Building ${options.image} from the project's Dockerfile`);
    ({ dockerfile, args: ignoreArgs } = withoutCredentials(tool, options.root, own, log));
  } else {
    base = options.baseImage ?? RUNTIME_IMAGES[options.kind];
    context = join(options.root, ".flash", "image");
    dockerfile = join(options.root, ".flash", "Dockerfile");
    checkArtifact(options.artifact, relative(options.root, options.artifact));
    const deps = await generatedContext(options.root, options.artifact, context);
    writeFileSync(dockerfile, generatedDockerfile(base, options.entry, deps));
    log.info(
      `Building ${options.image} FROM ${base}: the app as flash build ships it${deps.lock ? ", its dependencies installed in the image from the lock (npm ci)" : ""}`,
    );
  }
  const runtimeBase = Object.values(RUNTIME_IMAGES).find((name) => sameImage(name, base));
  if (runtimeBase) await ensureRuntimeImage(options, runtimeBase, show);

  const tlsVerify = options.tlsVerify ?? !isLoopbackRegistry(options.image);
  // The host's npm registry, CA and proxy for the Dockerfile's `RUN --mount=type=secret,id=npmrc npm ci`.
  const npmrc = npmrcSecret(options.root);
  const before = tool.name === "docker" ? undefined : await imageIdentity(tool, options.image);
  try {
    await bud(
      tool,
      [
        ...npmrc.args,
        ...ignoreArgs,
        ...(runtimeBase && tool.name !== "docker" ? ["--pull=never"] : []),
        // A FROM on a registry of this machine (a rehearsal's, a CI's) is plain HTTP, as the push below assumes.
        ...(!runtimeBase && tool.name !== "docker" && isLoopbackRegistry(base) ? ["--tls-verify=false"] : []),
        // A fixed creation time (and file times in the layers): the same sources and lock give the same digest.
        ...(tool.name === "docker" ? [] : ["--timestamp", String(imageEpoch())]),
        "-f",
        dockerfile,
        "-t",
        options.image,
        context,
      ],
      show,
    );
  } catch (err) {
    throw new ImageError(`Building ${options.image} failed: ${detail(err)}${baseHint(err, base)}`);
  } finally {
    npmrc.remove();
  }
  await keepSameImage(tool, options.image, before, log);
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

/**
 * The app image's creation time in epoch seconds: SOURCE_DATE_EPOCH (reproducible-builds.org) when it is a whole
 * number, else 0, so an unchanged app builds to the same digest and a redeploy of it changes nothing.
 */
export function imageEpoch(env: NodeJS.ProcessEnv = process.env): number {
  return sourceDateEpoch(env) ?? 0;
}

/** A local image's id and its config without what differs between two builds of the same thing. */
async function imageIdentity(
  tool: ContainerTool,
  image: string,
): Promise<{ id: string; key: string } | undefined> {
  try {
    const { stdout } = await runTool(tool, ["inspect", "--type", "image", image]);
    const info = JSON.parse(stdout) as { FromImageID?: string; Config?: string };
    if (!info.FromImageID || !info.Config) return undefined;
    const config = JSON.parse(info.Config) as {
      container?: string;
      config?: { Hostname?: string };
      container_config?: { Hostname?: string };
    };
    // buildah (1.28) writes its working container's id and hostname into a Docker-format config: new every build.
    delete config.container;
    if (config.config) delete config.config.Hostname;
    if (config.container_config) delete config.container_config.Hostname;
    return { id: info.FromImageID, key: JSON.stringify(config) };
  } catch {
    return undefined;
  }
}

/**
 * The tag back on the image it named before the build when the new one has the same layers, history and settings
 * (--timestamp fixes the times; only the build container's id and hostname differ): the digest stays the same.
 */
async function keepSameImage(
  tool: ContainerTool,
  image: string,
  before: { id: string; key: string } | undefined,
  log: Logger,
): Promise<void> {
  if (!before) return;
  const after = await imageIdentity(tool, image);
  if (!after || after.id === before.id || after.key !== before.key) return;
  await runTool(tool, ["tag", before.id, image]);
  await runTool(tool, ["rmi", after.id]).catch(() => undefined);
  log.info(`${image}: the same image as its last build (${before.id.slice(0, 12)}), kept with its digest`);
}

/** What the generated image installs: the lock of `flash build`'s install, and the `file:` packages it names. */
export interface GeneratedDependencies {
  /** deps/ holds package.json and package-lock.json. */
  lock: boolean;
  /** files/ holds the project's `file:` dependencies, at their paths in the project. */
  files: boolean;
}

/**
 * The generated image's build context in `context`: app/ the artifact's files (its node_modules/ left out: the
 * image installs its own), deps/ the lock `flash build` installed from, files/ the `file:` packages it names.
 */
export async function generatedContext(
  root: string,
  artifact: string,
  context: string,
): Promise<GeneratedDependencies> {
  rmSync(context, { recursive: true, force: true });
  mkdirSync(join(context, "app"), { recursive: true });
  await extract({
    file: artifact,
    cwd: join(context, "app"),
    strict: true,
    filter: (path) => !/^(\.\/)?node_modules(\/|$)/.test(path),
  });
  // The manifest's build time would make every image new: the image's copy says the image's own time.
  const manifest = join(context, "app", MANIFEST_NAME);
  if (existsSync(manifest)) {
    const parsed = JSON.parse(readFileSync(manifest, "utf8")) as { generatedAt?: string };
    parsed.generatedAt = new Date(imageEpoch() * 1000).toISOString();
    writeFileSync(manifest, `${JSON.stringify(parsed, null, 2)}\n`);
  }
  const install = join(root, ".flash", INSTALL_DIR);
  if (!existsSync(join(install, "package-lock.json"))) return { lock: false, files: false };
  // Specs were made absolute for the install on this host; in the image the project is /app, and the install
  // runs in /app/.flash/.build as here, so they become relative to it.
  const prefix = `file:${resolve(root)}/`;
  const local: string[] = [];
  const rewrite = (text: string) =>
    text.replace(/"file:([^"]+)"/g, (whole, path: string) => {
      if (!isAbsolute(path)) return whole;
      if (!`file:${path}`.startsWith(prefix)) {
        throw new ImageError(
          `The dependency ${JSON.stringify(`file:${path}`)} is outside the project ${root}, so the image cannot install it: keep the package inside the project (e.g. vendor/) and install it from there.`,
        );
      }
      const rel = relative(root, path);
      local.push(rel);
      return JSON.stringify(`file:../../${rel.split(sep).join("/")}`);
    });
  mkdirSync(join(context, "deps"));
  for (const file of ["package.json", "package-lock.json"]) {
    writeFileSync(join(context, "deps", file), rewrite(readFileSync(join(install, file), "utf8")));
  }
  const copies = copyFilter(root);
  for (const rel of new Set(local)) {
    // Links stay as written, as Docker's COPY keeps them (cpSync would make relative ones absolute).
    cpSync(join(root, rel), join(context, "files", rel), {
      recursive: true,
      verbatimSymlinks: true,
      filter: copies,
    });
  }
  return { lock: true, files: local.length > 0 };
}

/** The project's ignore files for a build context, in the order each tool looks for them. */
const CONTEXT_IGNORE_FILES = {
  buildah: [".containerignore", ".dockerignore"],
  podman: [".containerignore", ".dockerignore"],
  docker: [".dockerignore"],
} as const;

/**
 * The project Dockerfile's build context leaves out the credential files (docs/toolkit.md §8.1) before the
 * project's own .containerignore or .dockerignore, whose `!` lines may re-include one: buildah and podman take the
 * composed file as --ignorefile, docker (which has no such flag) beside a copy of the Dockerfile.
 */
function withoutCredentials(
  tool: ContainerTool,
  root: string,
  own: string,
  log: Logger,
): { dockerfile: string; args: string[] } {
  const found = CONTEXT_IGNORE_FILES[tool.name].find((name) => existsSync(join(root, name)));
  const theirs = found ? readFileSync(join(root, found), "utf8") : "";
  const text = [
    "# Written by flash deploy: the credential files, then the project's own ignore file.",
    ...credentialDockerignore(),
    theirs,
  ].join("\n");
  const leftOut = collectFiles(root, ignore().add(credentialRules()).add(theirs)).credentials;
  if (leftOut.length > 0) {
    log.info(
      `Left out of the build context as credentials (a ! line in ${found ?? ".dockerignore"} keeps one): ${leftOut.join(", ")}`,
    );
  }
  const dir = join(root, ".flash");
  mkdirSync(dir, { recursive: true });
  if (tool.name !== "docker") {
    writeFileSync(join(dir, "context.dockerignore"), text);
    return { dockerfile: own, args: ["--ignorefile", join(dir, "context.dockerignore")] };
  }
  // BuildKit reads <Dockerfile>.dockerignore beside the Dockerfile before the context's .dockerignore.
  const dockerfile = join(dir, "Dockerfile.project");
  cpSync(own, dockerfile);
  writeFileSync(`${dockerfile}.dockerignore`, text);
  return { dockerfile, args: [] };
}

/** What a `file:` package's copy keeps: neither its credential files nor its links out of the project. */
function copyFilter(root: string): (from: string) => boolean {
  const credential = credentialRules();
  const realRoot = realpathSync(root);
  return (from) => {
    const path = relative(root, from).split(sep).join("/");
    const stat = lstatSync(from);
    if (stat.isSymbolicLink()) return readLink(realRoot, from).inside !== undefined;
    return !path || !credential.ignores(stat.isDirectory() ? `${path}/` : path);
  };
}

/**
 * The generated Dockerfile: the app's dependencies installed from the lock with `npm ci` (the host's npm setup
 * as the `npmrc` build secret), then the app in /app, the entry file as the default command. The install's
 * node_modules stays where npm put it (relative links inside hold) and /app/node_modules points at it.
 */
export function generatedDockerfile(
  base: string,
  entry: string,
  deps: GeneratedDependencies = { lock: false, files: false },
): string {
  const install = deps.lock
    ? [
        "COPY deps/ /app/.flash/.build/",
        ...(deps.files ? ["COPY files/ /app/"] : []),
        `RUN --mount=type=secret,id=${NPMRC_SECRET},target=/root/.npmrc cd /app/.flash/.build && \\`,
        "    npm ci --omit=dev --ignore-scripts --no-audit --no-fund --cache /tmp/npm-cache --loglevel=warn && \\",
        "    rm -rf /tmp/npm-cache /root/.npm && ln -s .flash/.build/node_modules /app/node_modules",
      ]
    : [];
  return [
    "# Generated by flash deploy: the app as `flash build` ships it, on the flash-worker runtime image.",
    `FROM ${base}`,
    "WORKDIR /app",
    ...install,
    "COPY app/ /app/",
    `CMD ${JSON.stringify([entry])}`,
    "",
  ].join("\n");
}

/** The stand-in for the Dockerfiles' `node:24-bookworm-slim` that docker/build.sh makes (Debian + this node). */
export const STANDIN_IMAGE = "localhost/flash-standin:bookworm";

/** Where a release publishes the runtime images (scripts/release/images.sh): `<repo>:<version>-<kind>`. */
export const PUBLISHED_REPO = "ghcr.io/flash-worker/flash-worker";

/** This package version's published runtime image of one kind. */
export function publishedImage(kind: RuntimeKind, repo: string = PUBLISHED_REPO): string {
  return `${repo}:${VERSION}-${kind}`;
}

/**
 * Pulls this version's published runtime image and names it as the local one (flash-worker:<kind>); why not when
 * it cannot (before the first release, or offline), so the caller builds it instead.
 */
export async function pullRuntimeImage(
  tool: ContainerTool,
  kind: RuntimeKind,
  repo: string | undefined,
  show: (line: string) => void,
): Promise<{ pulled: string } | { failed: string; reason: string }> {
  const ref = publishedImage(kind, repo);
  const tls = `--tls-verify=${!isLoopbackRegistry(ref)}`;
  // A release not there yet, or a registry out of reach, should not cost buildah's three tries 2 s apart (0 means 3).
  const flags =
    tool.name === "docker"
      ? []
      : tool.name === "buildah"
        ? ["--retry", "1", "--retry-delay", "0s", tls]
        : [tls];
  try {
    await runTool(tool, ["pull", ...flags, ref], { onLine: show });
    await runTool(tool, ["tag", ref, RUNTIME_IMAGES[kind]]);
    return { pulled: ref };
  } catch (err) {
    const lines = detail(err)
      .split("\n")
      .map((line) => line.trim());
    return { failed: ref, reason: lines.filter(Boolean).pop() ?? "" };
  }
}

/** The runtime image in local storage, else pulled (this version's release), else built from the package's Dockerfile. */
async function ensureRuntimeImage(
  options: ImageOptions,
  image: string,
  show: (line: string) => void,
): Promise<void> {
  const { tool, log } = options;
  if (await imageExists(tool, image)) return;
  const kind =
    (Object.keys(RUNTIME_IMAGES) as RuntimeKind[]).find((k) => RUNTIME_IMAGES[k] === image) ?? "cpu";
  const pull = await pullRuntimeImage(tool, kind, options.imageRepo, show);
  if ("pulled" in pull) {
    log.info(`Pulled the runtime image ${pull.pulled} as ${image}`);
    return;
  }
  log.info(
    `The runtime image ${image} is in neither local storage nor a reachable registry (${pull.failed}: ${pull.reason}): building it first from ${runtimeDockerfile(kind)}${options.nodeBaseImage ? ` on ${options.nodeBaseImage}` : ""}`,
  );
  await buildRuntimeImage({
    tool,
    kind,
    show,
    nodeBaseImage: options.nodeBaseImage,
  });
}

/** The package's Dockerfile for a runtime image. */
export function runtimeDockerfile(kind: RuntimeKind): string {
  return join(PACKAGE_ROOT, kind === "cpu" ? "Dockerfile.cpu" : "Dockerfile.gpu");
}

export interface RuntimeBuild {
  tool: ContainerTool;
  kind: RuntimeKind;
  /** The Dockerfiles' BASE (and NODE_IMAGE for the GPU image); default node:24-bookworm-slim from Docker Hub. */
  nodeBaseImage?: string;
  show: (line: string) => void;
}

/**
 * Builds flash-worker:cpu or a CUDA flavor (:cuda, :cuda-runtime, :cuda-cudnn) from this package's Dockerfile, with the package folder as the context:
 * it reads dist/ and docker/ there and writes nothing (the GPU/CPU Dockerfiles need no `npm run build`).
 */
export async function buildRuntimeImage(build: RuntimeBuild): Promise<string> {
  const { tool, kind, nodeBaseImage } = build;
  const image = RUNTIME_IMAGES[kind];
  const dockerfile = runtimeDockerfile(kind);
  if (!existsSync(dockerfile) || !existsSync(join(PACKAGE_ROOT, "dist", "cli", "main.js"))) {
    throw new ImageError(
      `The runtime image ${image} cannot be built: this flash-worker (${PACKAGE_ROOT}) has no ${basename(dockerfile)} and dist/ to build it from. Reinstall the package (npm ci), or pass --base-image.`,
    );
  }
  const args: string[] = [];
  // npm in the build trusts what npm here trusts (a proxy's CA), as a build secret that stays out of the image.
  const ca = npmCaFile();
  if (ca) args.push("--secret", `id=npm_ca,src=${ca}`);
  const flavor = nvidiaFlavor(kind);
  if (flavor) args.push("--build-arg", `CUDA_FLAVOR=${flavor}`);
  if (nodeBaseImage) {
    args.push("--build-arg", `BASE=${nodeBaseImage}`);
    if (flavor) args.push("--build-arg", `NODE_IMAGE=${nodeBaseImage}`);
  }
  // The GPU image's node stage: buildah 1.28 leaves its container (`<node image>-working-container`) on success.
  const stage = flavor ? stageContainer(nodeBaseImage ?? "node:24-bookworm-slim") : undefined;
  try {
    await bud(tool, [...args, "-f", dockerfile, "-t", image, PACKAGE_ROOT], build.show, stage);
  } catch (err) {
    throw new ImageError(
      `Building the runtime image ${image} from ${dockerfile} failed: ${detail(err)}${baseHint(err, nodeBaseImage ?? "node:24-bookworm-slim")}`,
    );
  }
  return image;
}

/** The name buildah gives a build container from `image`: `flash-standin-working-container[-N]` for the stand-in. */
function stageContainer(image: string): RegExp {
  const name = (image.split("/").pop() ?? image).replace(/[:@].*$/, "");
  return new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-working-container(-\\d+)?$`);
}

/**
 * `docker build` with the tool: Docker format keeps HEALTHCHECK (OCI has none), chroot isolation runs RUN steps
 * without a runtime. A failed build leaves no working container behind (under vfs each is a full copy); after a
 * success only the `stage` ones go, since another build in the same storage may own the rest.
 */
async function bud(
  tool: ContainerTool,
  args: string[],
  show: (line: string) => void,
  stage?: RegExp,
): Promise<void> {
  if (tool.name === "docker") {
    await runTool(tool, ["build", ...args], { onLine: show });
    return;
  }
  const before = new Set(await workingContainers(tool));
  try {
    await runTool(
      tool,
      [tool.name === "buildah" ? "bud" : "build", "--format", "docker", "--isolation", "chroot", ...args],
      {
        onLine: show,
      },
    );
  } catch (err) {
    await removeNew(tool, before, () => true);
    throw err;
  }
  if (stage) await removeNew(tool, before, (name) => stage.test(name));
}

/** Removes the working containers made since `before` that `which` picks. */
async function removeNew(
  tool: ContainerTool,
  before: Set<string>,
  which: (name: string) => boolean,
): Promise<void> {
  const left = (await workingContainers(tool)).filter((name) => !before.has(name) && which(name));
  if (left.length > 0) await runTool(tool, ["rm", ...left]).catch(() => undefined);
}

/** The build containers in the tool's storage (`<image>-working-container[-N]`; workers have names of their own). */
async function workingContainers(tool: ContainerTool): Promise<string[]> {
  if (tool.name !== "buildah") return [];
  const listed = await runTool(tool, ["containers", "--format", "{{.ContainerName}}"]).catch(() => ({
    stdout: "",
  }));
  return listed.stdout.split("\n").filter((name) => /-working-container(-\d+)?$/.test(name));
}

/** A runtime or node base image that could not be pulled: name the way to build without Docker Hub. */
export function baseHint(err: unknown, base: string): string {
  const text = isContainerToolError(err) ? err.output : String(err);
  const pull =
    /creating build container|initializing source|pulling image|short-name|manifest unknown|not found in|reading manifest|unable to pull|error pulling/i;
  if (!pull.test(text)) return "";
  if (Object.values(RUNTIME_IMAGES).some((name) => sameImage(name, base))) {
    return `\n  The base image ${base} is not in this machine's storage: build it with \`npx flash image base\` (add --standin on a host without Docker Hub).`;
  }
  // Only a node base has the stand-in as a way out; another image's pull error speaks for itself.
  if (!/(^|\/)node:/.test(base)) return "";
  return `\n  The base image ${base} could not be pulled. On a host without Docker Hub, \`flash image base --standin\` builds the runtime images on a local stand-in for node:24-bookworm-slim (Debian bookworm + this machine's node), or set FLASH_NODE_BASE_IMAGE to a node image you have.`;
}

/** NODE_EXTRA_CA_CERTS, else npm's cafile setting, when it names a file. */
function npmCaFile(): string | undefined {
  const fromEnv = process.env.NODE_EXTRA_CA_CERTS;
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const npm = spawnSync("npm", ["config", "get", "cafile"], { encoding: "utf8", timeout: 15_000 });
  const file = npm.stdout?.trim();
  return file && file !== "null" && file !== "undefined" && existsSync(file) ? file : undefined;
}

/** Whether `image` is in the tool's local storage. */
export async function imageExists(tool: ContainerTool, image: string): Promise<boolean> {
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
export function fromOf(text: string): string | undefined {
  const froms = [...text.matchAll(/^\s*FROM\s+(?:--\S+\s+)*(\S+)/gim)].map((m) => m[1]!);
  return froms.at(-1);
}

/** The ENTRYPOINT the last stage of a Dockerfile sets, as written; undefined when it sets none. */
export function entrypointOf(text: string): string | undefined {
  const joined = text.replace(/\\\r?\n/g, " ");
  const lastStage = joined.split(/^\s*FROM\s/im).at(-1) ?? "";
  const entrypoints = [...lastStage.matchAll(/^\s*ENTRYPOINT\s+(.+?)\s*$/gim)].map((m) => m[1]!);
  return entrypoints.at(-1);
}

/**
 * Whether an ENTRYPOINT starts the handler file given as the container's argument: the images' own
 * (`flash-entrypoint`) or `flash start`, in exec form (the shell form drops every argument).
 */
export function takesHandlerFile(entrypoint: string): boolean {
  let words: unknown;
  try {
    words = JSON.parse(entrypoint);
  } catch {
    return false;
  }
  if (!Array.isArray(words) || !words.every((w) => typeof w === "string")) return false;
  const names = words.map((w: string) => basename(w));
  const last = names.at(-1);
  return last === "flash-entrypoint" || (names.at(-2) === "flash" && last === "start");
}

/** `flash-worker:cpu` and `localhost/flash-worker:cpu` are one image. */
function sameImage(a: string, b: string): boolean {
  const strip = (name: string) => name.replace(/^localhost\//, "");
  return strip(a) === strip(b);
}

function detail(err: unknown): string {
  if (isContainerToolError(err)) return `${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** What to try for the usual push failures. */
function hint(err: unknown): string {
  const text = isContainerToolError(err) ? err.output : String(err);
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
