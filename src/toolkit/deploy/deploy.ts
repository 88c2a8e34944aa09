// `flash deploy`: check the key, build the app, map its endpoints, build and push its image, then create each
// endpoint or PATCH the one of the same name, and record what exists in .flash/deployments.json.

import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { ContainerToolOptions } from "../../containers/tool.js";
import { findContainerTool } from "../../containers/tool.js";
import { FlashError } from "../../flash-error.js";
import { addSecret, type Logger } from "../../log/index.js";
import { type DeployedEndpoint, readDeployments, writeDeployments } from "../../project/deployments.js";
import {
  type BuildResult,
  buildArtifact,
  buildNotes,
  checkArtifact,
  formatSize,
  type ManifestEndpoint,
  WORKER_PLATFORM,
} from "../bundle/index.js";
import {
  appRuntimeKind,
  type BuiltImage,
  buildAndPush,
  checkImageName,
  entrypointOf,
  takesHandlerFile,
} from "../image/build.js";
import { credentialName, findRegistryLogin } from "../image/registry-auth.js";
import { isApiError, type RestClient } from "../rest/client.js";
import { apiErrorSentence } from "../rest/errors.js";
import type { CreateEndpointRequest, GpuCatalogType, RestEndpoint } from "../rest/types.js";
import { createRequest, EndpointMappingError, endpointUrl, updateRequest } from "./mapping.js";

/** What building and pushing the app's image takes. */
export interface ImageOptions {
  /** Project root. */
  root: string;
  entries: string[];
  image: string;
  nodeVersion?: string;
  baseImage?: string;
  nodeBaseImage?: string;
  /** Where the runtime image is pulled from when it is not in local storage (FLASH_IMAGE_REPO). */
  imageRepo?: string;
  tlsVerify?: boolean;
  /** The container tool to build and push with (FLASH_CONTAINER_TOOL, FLASH_CONTAINER_STORAGE). */
  containers?: ContainerToolOptions;
  log: Logger;
  /** One line of progress for the user (stdout). */
  say(line: string): void;
}

export interface DeployOptions extends ImageOptions {
  api: RestClient;
  /** Create or reuse a registry credential on the platform from the local auth files. */
  registryAuth: boolean;
}

export interface DeployedEntry {
  endpoint: ManifestEndpoint;
  id: string;
  url: string;
  /** "unchanged": the endpoint already runs this image digest with this spec, so nothing was sent. */
  action: "created" | "updated" | "unchanged";
}

export interface DeployResult {
  image: BuiltImage;
  endpoints: DeployedEntry[];
}

/** A deploy step failed; `done` says what exists on the platform by then. */
export class DeployError extends FlashError {
  readonly code = "DEPLOY_FAILED";
  override name = "DeployError";
}

export async function deployApp(options: DeployOptions): Promise<DeployResult> {
  const { api, log } = options;
  checkImageName(options.image);
  // The key and the API first: a refused key should not cost a build.
  let existing: RestEndpoint[];
  try {
    existing = await api.listEndpoints();
  } catch (err) {
    throw asDeployError(err, api.url);
  }
  const built = await buildApp(options);
  const { manifest } = built;

  // Every endpoint is mapped before the image is built: a bad GPU or CPU choice fails in seconds.
  const needsCatalog = manifest.endpoints.some((e) => !e.cpu);
  let catalog: GpuCatalogType[] = [];
  if (needsCatalog) {
    try {
      catalog = await api.gpuTypes();
    } catch (err) {
      throw asDeployError(err, api.url);
    }
  }
  const several = manifest.endpoints.length > 1;
  const wanted = new Map<string, CreateEndpointRequest>();
  for (const endpoint of manifest.endpoints) {
    wanted.set(
      endpoint.name,
      createRequest({ endpoint, image: options.image, catalog, args: endpoint.file }),
    );
  }
  const plans = manifest.endpoints.map((endpoint) => {
    const same = existing.filter((e) => e.name === endpoint.name);
    if (same.length > 1) {
      throw new EndpointMappingError(
        `Endpoint ${endpoint.name}: ${same.length} endpoints on ${api.url} have this name (${same.map((e) => e.id).join(", ")}), so flash deploy cannot tell which to update. Delete the extra ones (DELETE /v2/serverless/<id>, or the console), or rename this endpoint.`,
      );
    }
    const body = wanted.get(endpoint.name)!;
    const current = same[0];
    // Checked now (type and compute family cannot change), before anything is built or sent.
    if (current) updateRequest(current, body);
    return { endpoint, body, current };
  });

  if (several) checkOwnEntrypoint(options.root, manifest.endpoints);
  const image = await pushAppImage(options, built);

  let registry: string | undefined;
  if (options.registryAuth) registry = await registryCredential(options);

  const done: DeployedEntry[] = [];
  const specs = new Map<string, string>();
  const before = readDeployments(options.root);
  const record = () => {
    const previous = readDeployments(options.root);
    const endpoints: Record<string, DeployedEndpoint> =
      previous?.platform === api.url ? { ...previous.endpoints } : {};
    for (const entry of done) {
      endpoints[entry.endpoint.name] = {
        id: entry.id,
        url: entry.url,
        kind: entry.endpoint.kind,
        digest: image.digest || undefined, // JSON leaves out an unknown digest
        spec: specs.get(entry.endpoint.name),
      };
    }
    writeDeployments(options.root, {
      platform: api.url,
      deployedAt: new Date().toISOString(),
      image: image.image,
      endpoints,
      pods: previous?.platform === api.url ? previous.pods : undefined,
    });
  };
  for (const plan of plans) {
    const { endpoint } = plan;
    // An image with several endpoints runs each one's file (args override CMD, own Dockerfile or not).
    const args = several ? endpoint.file : undefined;
    const body: CreateEndpointRequest = { ...plan.body, registry };
    if (!args) delete body.args;
    const spec = createHash("sha256").update(JSON.stringify(body)).digest("hex");
    specs.set(endpoint.name, spec);
    const endpointLog = log.child({ subject: `Endpoint:${endpoint.name}` });
    const last = before?.platform === api.url ? before.endpoints[endpoint.name] : undefined;
    // The same digest and request as the last deploy, and the endpoint still on this image: a PATCH would only
    // make a new release of the same thing.
    if (
      plan.current &&
      last?.id === plan.current.id &&
      image.digest &&
      last.digest === image.digest &&
      last.spec === spec &&
      plan.current.image === body.image
    ) {
      options.say(
        `unchanged: ${endpoint.name} (${plan.current.id}) already runs ${image.image}@${image.digest}; not updated`,
      );
      done.push({
        endpoint,
        id: plan.current.id,
        url: endpointUrl(plan.current, body.type),
        action: "unchanged",
      });
      continue;
    }
    try {
      let result: RestEndpoint;
      if (plan.current) {
        const patch = updateRequest(plan.current, body);
        if (!args && plan.current.args) patch.args = "";
        result = await api.updateEndpoint(plan.current.id, patch);
        endpointLog.info(`Updated endpoint: ${result.id} - ${result.name}`);
      } else {
        result = await api.createEndpoint(body);
        endpointLog.info(`Created endpoint: ${result.id} - ${result.name}`);
      }
      done.push({
        endpoint,
        id: result.id,
        url: endpointUrl(result, body.type),
        action: plan.current ? "updated" : "created",
      });
    } catch (err) {
      record();
      const sentence = isApiError(err)
        ? apiErrorSentence(err, `endpoint ${endpoint.name}`, api.url)
        : asDeployError(err, api.url).message;
      const so = done.length
        ? ` Deployed before it: ${done.map((d) => `${d.endpoint.name} (${d.id}, ${d.action})`).join(", ")}; recorded in .flash/deployments.json.`
        : " No endpoint of this app was created or changed.";
      throw new DeployError(`Failed to provision resources for endpoint ${endpoint.name}: ${sentence}.${so}`);
    }
  }
  record();
  return { image, endpoints: done };
}

/** Each endpoint's container gets its file as args: a project Dockerfile's own ENTRYPOINT must start that file. */
function checkOwnEntrypoint(root: string, endpoints: readonly ManifestEndpoint[]): void {
  const own = join(root, "Dockerfile");
  if (!existsSync(own)) return;
  const entrypoint = entrypointOf(readFileSync(own, "utf8"));
  if (entrypoint === undefined || takesHandlerFile(entrypoint)) return;
  throw new EndpointMappingError(
    `The project's Dockerfile sets ENTRYPOINT ${entrypoint}, which does not start the handler file it is given, and this app has ${endpoints.length} endpoints (${endpoints.map((e) => e.file).join(", ")}) sharing one image: each endpoint's container is started with its file as its argument (args). Remove the ENTRYPOINT (the runtime image's flash-entrypoint starts the file it is given), end it in flash-entrypoint or flash start in exec form (["flash", "start"]), or deploy each endpoint on its own.`,
  );
}

/** Builds the app's artifact (as flash build does) and says so: its manifest names the endpoints. */
export async function buildApp(options: ImageOptions): Promise<BuildResult> {
  const built = await buildArtifact({
    root: options.root,
    entries: options.entries,
    target: WORKER_PLATFORM,
    // A project Dockerfile installs the app's dependencies itself: the artifact's install would go unused.
    installDependencies: !existsSync(join(options.root, "Dockerfile")),
    nodeVersion: options.nodeVersion,
    log: options.log.child({ subject: "build" }),
  });
  const { manifest } = built;
  checkArtifact(built.artifact, relative(options.root, built.artifact));
  options.say(
    [
      `✓ built ${manifest.projectName}  ${manifest.files} files, ${manifest.endpoints.length} endpoint(s), ${formatSize(built.bytes)}`,
      ...buildNotes(built),
    ].join("\n"),
  );
  return built;
}

/** Builds the app's image on its artifact (the runtime image appRuntimeKind picks: cpu, or a CUDA flavor) and pushes it. */
export async function pushAppImage(options: ImageOptions, built: BuildResult): Promise<BuiltImage> {
  const { manifest } = built;
  const tool = findContainerTool(options.containers);
  const kind = appRuntimeKind(manifest.endpoints);
  const image = await buildAndPush({
    tool,
    root: options.root,
    artifact: built.artifact,
    image: options.image,
    entry: manifest.endpoints[0]?.file ?? "handler.ts",
    kind,
    baseImage: options.baseImage,
    nodeBaseImage: options.nodeBaseImage,
    imageRepo: options.imageRepo,
    tlsVerify: options.tlsVerify,
    log: options.log.child({ subject: "image" }),
  });
  options.say(
    `✓ image ${image.image}  ${formatSize(image.bytes)}  built in ${(image.buildMs / 1000).toFixed(1)}s, pushed in ${(image.pushMs / 1000).toFixed(1)}s${image.digest ? `  ${image.digest}` : ""}`,
  );
  return image;
}

/** The platform's credential for the image's registry: reused by name, else created from the local auth files. */
export async function registryCredential(options: ImageOptions & { api: RestClient }): Promise<string> {
  const login = findRegistryLogin(options.image);
  if (!login) {
    throw new DeployError(
      `--registry-auth: no saved login for ${options.image.split("/")[0]} in the auth files (REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json). Log in first: buildah login, podman login or docker login.`,
    );
  }
  // The password travels to the platform in a body, never into a log line.
  addSecret(login.password);
  const name = credentialName(login);
  try {
    const found = (await options.api.listRegistries()).find((r) => r.name === name);
    if (found) {
      options.log.child({ subject: "registry" }).info(`Using registry credential ${found.id} (${name})`);
      return found.id;
    }
    const created = await options.api.createRegistry({
      name,
      username: login.username,
      password: login.password,
    });
    options.log
      .child({ subject: "registry" })
      .info(`Created registry credential ${created.id} (${name}) from ${login.file}`);
    return created.id;
  } catch (err) {
    if (isApiError(err))
      throw new DeployError(apiErrorSentence(err, `registry credential ${name}`, options.api.url));
    throw asDeployError(err, options.api.url);
  }
}

export function asDeployError(err: unknown, url: string): Error {
  if (isApiError(err)) return new DeployError(apiErrorSentence(err, "the deployment", url));
  return err instanceof Error ? err : new Error(String(err));
}
