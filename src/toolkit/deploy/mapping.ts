// An app's endpoint (its manifest entry) as a REST v2 CreateEndpointRequest, and the PATCH that brings an
// existing endpoint to it: GPU groups and types to pools (GET /v2/catalog/gpus), CPU instance names to flavors.

import { FlashError } from "../../flash-error.js";
import type { ManifestEndpoint } from "../bundle/index.js";
import type {
  CreateCpu,
  CreateEndpointGpu,
  CreateEndpointRequest,
  GpuCatalogType,
  RestEndpoint,
  UpdateEndpointRequest,
} from "../rest/types.js";

/** The app's endpoints cannot be expressed for the API (or clash with what exists); the message says which and why. */
export class EndpointMappingError extends FlashError {
  readonly code = "ENDPOINT_MAPPING_INVALID";
  override name = "EndpointMappingError";
}

/** GpuGroup.ANY: every serverless pool. */
const ANY_GPU = "any";
/** Scalers by kind: queue endpoints scale on queue wait (s), load-balanced ones on requests in flight per worker. */
export const QUEUE_SCALING = { type: "QUEUE_DELAY", queueDelay: 4 } as const;
export const LB_SCALING = { type: "REQUEST_COUNT", requestCount: 4 } as const;
/** The port load-balanced workers serve on (the images' PORT, RunPod's default). */
export const LB_PORT = "80";

export interface MappingInput {
  endpoint: ManifestEndpoint;
  image: string;
  /** The GPU catalog; needed only when the endpoint names GPU types or groups. */
  catalog?: readonly GpuCatalogType[];
  /** Container arguments: the entry file, for images that hold several endpoints. */
  args?: string;
  /** Registry credential id for a private image. */
  registry?: string;
}

/** `cpu5c-4-8` → `{id: "cpu5c", vcpuCount: 4}` (memory follows from the flavor); vCPUs must be a power of two. */
export function cpuFlavor(instance: string, endpoint: string): CreateCpu {
  const match = /^(cpu\d+[a-z]+)-(\d+)-(\d+)$/.exec(instance);
  if (!match) {
    throw new EndpointMappingError(
      `Endpoint ${endpoint}: cpu "${instance}" is not an instance type name like cpu5c-4-8 (flavor-vCPUs-GiB)`,
    );
  }
  const vcpuCount = Number(match[2]);
  if (vcpuCount < 2 || (vcpuCount & (vcpuCount - 1)) !== 0) {
    throw new EndpointMappingError(
      `Endpoint ${endpoint}: cpu "${instance}" asks for ${vcpuCount} vCPUs; the API takes a power of two from 2 (2, 4, 8, 16, …), e.g. ${match[1]}-${Math.max(2, 2 ** Math.round(Math.log2(Math.max(vcpuCount, 2))))}-${match[3]}`,
    );
  }
  return { id: match[1]!, vcpuCount };
}

/** GpuGroups and GpuTypes → pools, and the cards of a type-chosen pool that were not chosen → excludedTypes. */
export function gpuSelection(
  gpus: readonly string[],
  catalog: readonly GpuCatalogType[],
  endpoint: string,
): Pick<CreateEndpointGpu, "pools" | "excludedTypes"> {
  const allPools = [...new Set(catalog.flatMap((gpu) => (gpu.pool ? [gpu.pool] : [])))].sort();
  const wholePools = new Set<string>();
  const typePools = new Map<string, Set<string>>();
  for (const gpu of gpus) {
    if (gpu === ANY_GPU) {
      for (const pool of allPools) wholePools.add(pool);
    } else if (allPools.includes(gpu)) {
      wholePools.add(gpu);
    } else {
      const type = catalog.find((entry) => entry.id === gpu);
      if (!type) {
        throw new EndpointMappingError(
          `Endpoint ${endpoint}: unknown GPU type or pool "${gpu}": GET /v2/catalog/gpus lists no such GPU (pools: ${allPools.join(", ") || "none"})`,
        );
      }
      if (!type.pool) {
        throw new EndpointMappingError(
          `Endpoint ${endpoint}: GPU type "${gpu}" is in no serverless pool (GET /v2/catalog/gpus gives it pool null); choose another type or a GpuGroup`,
        );
      }
      const chosen = typePools.get(type.pool) ?? new Set<string>();
      chosen.add(type.id);
      typePools.set(type.pool, chosen);
    }
  }
  const excluded: string[] = [];
  for (const [pool, chosen] of typePools) {
    if (wholePools.has(pool)) continue;
    for (const gpu of catalog) if (gpu.pool === pool && !chosen.has(gpu.id)) excluded.push(gpu.id);
  }
  const pools = [...new Set([...wholePools, ...typePools.keys()])].sort();
  if (pools.length === 0) {
    throw new EndpointMappingError(
      `Endpoint ${endpoint}: the GPU catalog has no serverless pool to run it on`,
    );
  }
  // No excludedTypes key unless a type is excluded: an empty list is a different PATCH.
  return { pools, ...(excluded.length > 0 ? { excludedTypes: [...new Set(excluded)].sort() } : {}) };
}

/** The POST /v2/serverless body for one endpoint of the app. */
export function createRequest(input: MappingInput): CreateEndpointRequest {
  const { endpoint } = input;
  const loadBalanced = endpoint.kind === "load-balanced";
  // A load-balanced worker is told its ports; a queue worker gets no PORT variable at all.
  const env = { ...(endpoint.env ?? {}), ...(loadBalanced ? { PORT: LB_PORT, PORT_HEALTH: LB_PORT } : {}) };
  const body: CreateEndpointRequest = {
    name: endpoint.name,
    type: loadBalanced ? "LOAD_BALANCER" : "QUEUE",
    image: input.image,
    env,
    workers: {
      min: endpoint.workers[0],
      max: endpoint.workers[1],
      // Absent, RunPod applies its default idle timeout.
      ...(endpoint.idleTimeout ? { idleTimeout: endpoint.idleTimeout } : {}),
    },
    scaling: loadBalanced ? { ...LB_SCALING } : { ...QUEUE_SCALING },
  };
  if (input.args) body.args = input.args;
  if (input.registry) body.registry = input.registry;
  if (endpoint.cpu) {
    const flavors = endpoint.cpu.map((instance) => cpuFlavor(instance, endpoint.name));
    body.cpu = flavors.filter(
      (flavor, i) => flavors.findIndex((f) => f.id === flavor.id && f.vcpuCount === flavor.vcpuCount) === i,
    );
  } else {
    const gpus = endpoint.gpu ?? [ANY_GPU];
    body.gpu = {
      ...gpuSelection(gpus, input.catalog ?? [], endpoint.name),
      count: 1,
      // Absent, any CUDA version; an empty string would be refused.
      ...(endpoint.minCudaVersion ? { minCudaVersion: endpoint.minCudaVersion } : {}),
    };
  }
  if (endpoint.executionTimeoutMs > 0) body.timeout = endpoint.executionTimeoutMs;
  if (endpoint.flashboot) body.flashboot = endpoint.flashboot;
  if (endpoint.volume) body.networkVolumes = [endpoint.volume];
  return body;
}

/**
 * The PATCH /v2/serverless/<id> body that makes `existing` what `wanted` describes: every field restated
 * (PATCH replaces what it names), and constraints the app dropped cleared explicitly.
 */
export function updateRequest(existing: RestEndpoint, wanted: CreateEndpointRequest): UpdateEndpointRequest {
  if (existing.type && existing.type !== wanted.type) {
    throw new EndpointMappingError(
      `Endpoint ${wanted.name}: an endpoint of that name (${existing.id}) exists as ${existing.type}, and this app's is ${wanted.type}; the type of an endpoint cannot change. Undeploy it first (flash undeploy ${wanted.name}) or rename this one.`,
    );
  }
  const existingCpu = Array.isArray(existing.cpu) && existing.cpu.length > 0;
  if (existingCpu !== Boolean(wanted.cpu)) {
    throw new EndpointMappingError(
      `Endpoint ${wanted.name}: an endpoint of that name (${existing.id}) runs on ${existingCpu ? "CPUs" : "GPUs"}, and this app's on ${wanted.cpu ? "CPUs" : "GPUs"}; the compute of an endpoint cannot change. Undeploy it first (flash undeploy ${wanted.name}) or rename this one.`,
    );
  }
  const { type: _type, gpu, ...rest } = wanted;
  const patch: UpdateEndpointRequest = { ...rest };
  patch.env = wanted.env ?? {};
  if (gpu) {
    patch.gpu = { ...gpu };
    if (!gpu.minCudaVersion && existing.gpu?.minCudaVersion) patch.gpu.minCudaVersion = "";
    if (existing.gpu?.allowedCudaVersions?.length) patch.gpu.allowedCudaVersions = [];
  }
  if (!wanted.networkVolumes && existing.networkVolumes.length > 0) patch.networkVolumes = [];
  if (!wanted.registry && existing.registry) patch.registry = null;
  if (!wanted.timeout) patch.timeout = 300_000;
  if (!wanted.flashboot && existing.flashboot !== "OFF") patch.flashboot = "OFF";
  return patch;
}

/**
 * The base URL OpenAI clients take for a queue endpoint that serves OpenAI (openaiCompatible(), or a model server's
 * passthrough): `<endpoint URL>/openai/v1`, e.g. `https://api.runpod.ai/v2/<id>/openai/v1`. `flash dev` and
 * `flash deploy` print it.
 */
export function openaiBaseUrl(endpointUrl: string): string {
  return `${endpointUrl.replace(/\/+$/, "")}/openai/v1`;
}

/** `{base_url}/v2/<id>` for a queue endpoint, the routes' base URL for a load-balanced one. */
export function endpointUrl(endpoint: RestEndpoint, type: "QUEUE" | "LOAD_BALANCER"): string {
  const urls = endpoint.requestUrls;
  if (urls && "runSync" in urls) return urls.runSync.replace(/\/runsync$/, "");
  if (urls && "base" in urls) return urls.base.replace(/\/+$/, "");
  return type === "LOAD_BALANCER"
    ? `https://${endpoint.id}.api.runpod.ai`
    : `https://api.runpod.ai/v2/${endpoint.id}`;
}
