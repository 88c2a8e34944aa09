// An app's endpoint as a Pod (REST v2 /v2/pods): the create body, the PATCH that brings an existing Pod to it,
// and where its ports are reached (the proxy URL of each http port, `ip:port` of each tcp port).

import { ConfigError } from "../../options/index.js";
import type { DeployedPod } from "../../project/deployments.js";
import type { ManifestEndpoint } from "../bundle/index.js";
import { DEFAULT_API_URL } from "../rest/client.js";
import type { CreatePodRequest, GpuCatalogType, RestPod, UpdatePodRequest } from "../rest/types.js";
import { cpuFlavor, EndpointMappingError } from "./mapping.js";

/** One exposed port: `8000/http` through the proxy, `22/tcp` forwarded to a public port. */
export interface PodPort {
  port: number;
  type: "http" | "tcp";
}

/** The port a load-balanced app serves on when no --port names one (RunPod's PORT default). */
export const POD_LB_PORT = 80;
/** The port of a queue app's test API when no --port names one (--rp_api_port's default). */
export const POD_API_PORT = 8000;
/** The endpoint id a queue app's test API (--rp_serve_api) serves its jobs under. */
export const POD_API_ENDPOINT = "local";

/** `--port 8000/http` or `--port 22/tcp`. */
export function podPort(raw: string, source: string): PodPort {
  const m = /^(\d{1,5})\/(http|tcp)$/.exec(raw.trim());
  const port = Number(m?.[1]);
  if (!m || port < 1 || port > 65535) {
    throw new ConfigError(`Invalid port "${raw}" in ${source}: expected N/http or N/tcp, N from 1 to 65535`);
  }
  return { port, type: m[2] as PodPort["type"] };
}

export interface PodInput {
  endpoint: ManifestEndpoint;
  /** The image reference the Pod pulls. */
  image: string;
  /** --gpu: a GPU type id of the catalog. */
  gpu?: string;
  /** --port, in order. */
  ports: readonly PodPort[];
  catalog: readonly GpuCatalogType[];
  /** The entry file the image's command must name (an image holding several endpoints); none: the image's CMD. */
  file?: string;
  /** A queue app's test API takes this key (the one the toolkit calls the Pod with). */
  apiKey: string;
  /** Registry credential id for a private image. */
  registry?: string;
}

/** The port the app listens on: the first http port, else the first tcp one, else the kind's default. */
export function appPort(endpoint: ManifestEndpoint, ports: readonly PodPort[]): PodPort {
  const chosen = ports.find((p) => p.type === "http") ?? ports.find((p) => p.type === "tcp");
  return chosen ?? { port: endpoint.kind === "load-balanced" ? POD_LB_PORT : POD_API_PORT, type: "http" };
}

/** The POST /v2/pods body for the app's endpoint. */
export function podRequest(input: PodInput): CreatePodRequest {
  const { endpoint } = input;
  const seen = new Set<number>();
  for (const p of input.ports) {
    if (seen.has(p.port)) {
      throw new ConfigError(`--port ${p.port} is given twice: a Pod exposes a port as http or as tcp, once`);
    }
    seen.add(p.port);
  }
  const app = appPort(endpoint, input.ports);
  const ports = input.ports.length > 0 ? input.ports : [app];
  const body: CreatePodRequest = {
    name: endpoint.name,
    image: input.image,
    ports: ports.map((p) => `${p.port}/${p.type}`),
    env: { ...endpoint.env },
  };
  if (endpoint.kind === "load-balanced") {
    // Unchanged from serverless: the routes and /ping on PORT.
    body.env = { ...body.env, PORT: String(app.port), PORT_HEALTH: String(app.port) };
    if (input.file) body.args = input.file;
  } else {
    // No queue on a Pod: the worker serves its local test API, on every interface so the proxy reaches it.
    body.args = `${input.file ?? endpoint.file} --rp_serve_api --rp_api_host 0.0.0.0 --rp_api_port ${app.port}`;
    body.env = { ...body.env, FLASH_API_KEY: input.apiKey };
  }
  if (input.registry) body.registry = input.registry;
  if (input.gpu) body.gpu = { id: gpuType(input.gpu, input.catalog, endpoint.name), count: 1 };
  else if (endpoint.cpu?.[0]) body.cpu = cpuFlavor(endpoint.cpu[0], endpoint.name);
  else body.gpu = { id: declaredGpu(endpoint, input.catalog), count: 1 };
  return body;
}

/** A GPU type id of the catalog, or the error that lists some. */
function gpuType(id: string, catalog: readonly GpuCatalogType[], name: string): string {
  if (catalog.some((gpu) => gpu.id === id)) return id;
  throw new EndpointMappingError(
    `Pod ${name}: unknown GPU type "${id}" for --gpu: GET /v2/catalog/gpus lists no such id (e.g. ${sample(catalog)})`,
  );
}

/** The first GPU type the endpoint names; a Pod runs on one type, so a group alone is not enough. */
function declaredGpu(endpoint: ManifestEndpoint, catalog: readonly GpuCatalogType[]): string {
  const type = endpoint.gpu?.find((gpu) => catalog.some((entry) => entry.id === gpu));
  if (type) return type;
  throw new EndpointMappingError(
    `Pod ${endpoint.name}: a Pod runs on one GPU type, and this endpoint names ${endpoint.gpu?.length ? `only groups (${endpoint.gpu.join(", ")})` : "none"}: pass --gpu TYPE (GET /v2/catalog/gpus ids, e.g. ${sample(catalog)})`,
  );
}

function sample(catalog: readonly GpuCatalogType[]): string {
  return (
    catalog
      .slice(0, 3)
      .map((gpu) => `"${gpu.id}"`)
      .join(", ") || "none listed"
  );
}

/** The PATCH /v2/pods/<id> body that makes `existing` run what `wanted` describes; its compute cannot change. */
export function podUpdate(existing: RestPod, wanted: CreatePodRequest): UpdatePodRequest {
  const compute = (pod: Pick<CreatePodRequest, "gpu" | "cpu">) =>
    pod.gpu ? `GPU ${pod.gpu.id}` : `CPU ${pod.cpu?.id}x${pod.cpu?.vcpuCount}`;
  if (compute(existing) !== compute(wanted)) {
    throw new EndpointMappingError(
      `Pod ${wanted.name}: a Pod of that name (${existing.id}) runs on ${compute(existing)}, and this deploy asks for ${compute(wanted)}; a Pod's compute cannot change. Undeploy it first (flash undeploy ${wanted.name}) or rename this endpoint.`,
    );
  }
  const { gpu: _gpu, cpu: _cpu, name: _name, ...patch } = wanted;
  // PATCH replaces what it names: arguments and a credential the app no longer has are cleared.
  patch.args = wanted.args ?? "";
  if (!wanted.registry && existing.registry) patch.registry = null;
  return patch;
}

/** `repo/name:tag` pinned to what was pushed (`repo/name@sha256:…`), so a changed image changes the Pod. */
export function pinnedImage(image: string, digest: string): string {
  if (!digest) return image;
  const slash = image.lastIndexOf("/");
  const tagAt = image.indexOf(":", slash + 1);
  return `${tagAt < 0 ? image : image.slice(0, tagAt)}@${digest}`;
}

/**
 * An http port's URL: `https://<pod_id>-<port>.proxy.runpod.net` on RunPod, `<platform>/pods/<pod_id>/<port>` on the
 * local platform: a path on its own address, which every client reaches (Node's resolver knows no `*.localhost`).
 */
export function proxyUrl(apiUrl: string, podId: string, port: number): string {
  if (apiUrl === DEFAULT_API_URL) return `https://${podId}-${port}.proxy.runpod.net`;
  return `${new URL(apiUrl).origin}/pods/${podId}/${port}`;
}

/** Where the Pod's ports are reached: each http port's proxy URL, each running tcp port's `ip:port`. */
export function podAddresses(
  apiUrl: string,
  pod: RestPod,
): { http: Record<string, string>; tcp: Record<string, string> } {
  const http: Record<string, string> = {};
  const tcp: Record<string, string> = {};
  for (const entry of pod.ports) {
    const [port, type] = entry.split("/");
    if (type === "http") http[port!] = proxyUrl(apiUrl, pod.id, Number(port));
  }
  for (const port of pod.runtime?.ports ?? []) {
    if (port.type === "tcp" && port.ip && port.public != null)
      tcp[String(port.private)] = `${port.ip}:${port.public}`;
  }
  return { http, tcp };
}

/** The record .flash/deployments.json keeps, and the client reads: the URL its calls go to. */
export function deployedPod(
  apiUrl: string,
  pod: RestPod,
  endpoint: ManifestEndpoint,
  app: PodPort,
): DeployedPod {
  const { http, tcp } = podAddresses(apiUrl, pod);
  const address = tcp[String(app.port)];
  // A tcp port's address is known once the Pod runs; until then there is nothing to call.
  const base = app.type === "http" ? proxyUrl(apiUrl, pod.id, app.port) : address && `http://${address}`;
  const url = !base ? "" : endpoint.kind === "load-balanced" ? base : `${base}/v2/${POD_API_ENDPOINT}`;
  return {
    id: pod.id,
    image: pod.image,
    kind: endpoint.kind,
    url,
    http,
    tcp,
  };
}
