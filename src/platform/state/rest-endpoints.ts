// Serverless endpoints made through REST v2 (/v2/serverless): their records, made from create bodies and changed by
// update bodies under the rules the schema cannot say, each change a new release.
import { newShortId } from "./ids.js";
import { invalidBody, Problem } from "./problem.js";
import type { Registries } from "./registries.js";
import { type DiffEntry, differences, Releases } from "./releases.js";

export type EndpointType = "QUEUE" | "LOAD_BALANCER";
export type Scaling =
  | { type: "QUEUE_DELAY"; queueDelay: number }
  | { type: "REQUEST_COUNT"; requestCount: number };

/** An endpoint made through the API, as it is stored and (less the bookkeeping) returned. */
export interface RestEndpointRecord {
  id: string;
  name: string;
  type: EndpointType;
  image: string;
  args: string;
  disk: number;
  env: Record<string, string>;
  ports: string[];
  registry: string | null;
  gpu: {
    pools: string[];
    excludedTypes?: string[];
    count: number;
    allowedCudaVersions: string[];
    minCudaVersion: string | null;
  } | null;
  cpu?: { id: string; vcpuCount: number; memory: number }[];
  workers: { min: number; max: number; idleTimeout: number };
  scaling: Scaling;
  dataCenterIds: string[];
  networkVolumes: string[];
  timeout: number;
  flashboot: "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";
  createdAt: string;
}

export interface CreateEndpointBody {
  name: string;
  type: EndpointType;
  image?: string;
  templateId?: string;
  args?: string;
  disk?: number;
  env?: Record<string, string>;
  ports?: string[];
  registry?: string | null;
  gpu?: {
    pools: string[];
    excludedTypes?: string[];
    count?: number;
    allowedCudaVersions?: string[];
    minCudaVersion?: string;
  };
  cpu?: { id: string; vcpuCount: number }[];
  workers?: { min?: number; max?: number; idleTimeout?: number };
  scaling: Scaling;
  dataCenterIds?: string[];
  networkVolumes?: string[];
  timeout?: number;
  flashboot?: "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";
}

export type UpdateEndpointBody = Partial<Omit<CreateEndpointBody, "type" | "gpu">> & {
  gpu?: Partial<NonNullable<CreateEndpointBody["gpu"]>>;
};

/** A GPU type of the catalog as the rules need it: which serverless pool sells it. */
export interface PoolEntry {
  id: string;
  pool: string | null;
}

/** An endpoint with its releases and the working containers made for them. */
export interface StoredEndpoint {
  record: RestEndpointRecord;
  releases: Releases;
  /** Working containers of its releases, removed with it. */
  containers: string[];
  /** The image being prepared or running now, so a later PATCH wins over an earlier slow pull. */
  preparing: number;
}

const RAM_PER_VCPU: Record<string, number> = { c: 2, g: 4, m: 8 };
const DEFAULTS = { timeout: 300_000, idleTimeout: 10, min: 0, max: 3, disk: 20 };
const UPDATABLE = [
  "name",
  "image",
  "args",
  "disk",
  "env",
  "ports",
  "registry",
  "scaling",
  "dataCenterIds",
  "networkVolumes",
  "timeout",
  "flashboot",
] as const;

export class RestEndpoints {
  private readonly endpoints = new Map<string, StoredEndpoint>();

  constructor(
    private readonly catalog: readonly PoolEntry[],
    private readonly registries: Registries,
  ) {}

  list(): StoredEndpoint[] {
    return [...this.endpoints.values()];
  }

  /** The endpoint, or a 404. */
  get(id: string): StoredEndpoint {
    const stored = this.endpoints.get(id);
    if (!stored) throw new Problem(404, `serverless endpoint ${id} not found`);
    return stored;
  }

  /** Still the endpoint stored under its id (not deleted, not replaced). */
  holds(stored: StoredEndpoint): boolean {
    return this.endpoints.get(stored.record.id) === stored;
  }

  /** An endpoint from a create body (already valid against the schema): version 1. */
  create(body: CreateEndpointBody): StoredEndpoint {
    const record = this.fromCreate(body);
    this.check(record, body);
    const stored: StoredEndpoint = {
      record,
      releases: new Releases([{ field: "template.imageName", old: null, new: record.image }]),
      containers: [],
      preparing: 0,
    };
    this.endpoints.set(record.id, stored);
    return stored;
  }

  /** Applies an update body (already valid against the schema); a change makes a new version. */
  update(
    stored: StoredEndpoint,
    body: UpdateEndpointBody,
  ): { before: RestEndpointRecord; diff: DiffEntry[] } {
    const before = structuredClone(stored.record);
    const next = this.applyUpdate(before, body);
    this.check(next, body);
    const diff = differences(before, next);
    stored.record = next;
    stored.releases.next(diff);
    return { before, diff };
  }

  /** Forgets the endpoint (its workers are the caller's to stop). */
  delete(stored: StoredEndpoint): void {
    this.endpoints.delete(stored.record.id);
  }

  /** What pulls with this registry credential, if anything. */
  usingRegistry(registry: string): string | undefined {
    const user = this.list().find((s) => s.record.registry === registry);
    return user ? `endpoint ${user.record.id}` : undefined;
  }

  /** The serverless pools of the catalog, sorted. */
  pools(): string[] {
    return [...new Set(this.catalog.flatMap((g) => (g.pool ? [g.pool] : [])))].sort();
  }

  private fromCreate(body: CreateEndpointBody): RestEndpointRecord {
    if (body.templateId !== undefined) {
      throw new Problem(400, "templateId: the local platform has no templates; send image instead");
    }
    if (body.image === undefined) throw invalidBody(["$: must have required property 'image'"]);
    const record: RestEndpointRecord = {
      id: newShortId(8),
      name: body.name,
      type: body.type,
      image: body.image,
      args: body.args ?? "",
      disk: body.disk ?? DEFAULTS.disk,
      env: body.env ?? {},
      ports: body.ports ?? [],
      registry: body.registry ?? null,
      gpu: null,
      workers: {
        min: body.workers?.min ?? DEFAULTS.min,
        max: body.workers?.max ?? DEFAULTS.max,
        idleTimeout: body.workers?.idleTimeout ?? DEFAULTS.idleTimeout,
      },
      scaling: body.scaling,
      dataCenterIds: body.dataCenterIds ?? [],
      networkVolumes: body.networkVolumes ?? [],
      timeout: body.timeout ?? DEFAULTS.timeout,
      flashboot: body.flashboot ?? "OFF",
      createdAt: new Date().toISOString(),
    };
    if (body.cpu && body.gpu) throw new Problem(400, "gpu and cpu are mutually exclusive: send one");
    if (body.cpu) record.cpu = body.cpu.map(cpuConfig);
    else record.gpu = gpuConfig(body.gpu ?? { pools: this.pools() });
    return record;
  }

  private applyUpdate(record: RestEndpointRecord, body: UpdateEndpointBody): RestEndpointRecord {
    if (body.templateId !== undefined) {
      throw new Problem(400, "templateId: the local platform has no templates; send image instead");
    }
    const next = { ...record };
    for (const field of UPDATABLE) {
      if (body[field] !== undefined) (next as Record<string, unknown>)[field] = body[field];
    }
    if (body.workers) next.workers = { ...record.workers, ...body.workers };
    if (body.cpu) {
      if (!record.cpu)
        throw new Problem(400, "cpu: this is a GPU endpoint; its compute family cannot be changed");
      next.cpu = body.cpu.map(cpuConfig);
    }
    if (body.gpu) {
      if (!record.gpu)
        throw new Problem(400, "gpu: this is a CPU endpoint; its compute family cannot be changed");
      next.gpu = updatedGpu(record.gpu, body.gpu);
    }
    return next;
  }

  /** The rules the schema cannot say; each a 400 naming the field. */
  private check(record: RestEndpointRecord, body: { workers?: { idleTimeout?: number } }): void {
    const { workers } = record;
    if (workers.min > workers.max) {
      throw new Problem(400, `workers.min (${workers.min}) cannot exceed workers.max (${workers.max})`);
    }
    if (record.type === "LOAD_BALANCER" && record.scaling.type !== "REQUEST_COUNT") {
      throw invalidBody(["$.scaling.type: load-balanced endpoints must scale on REQUEST_COUNT"]);
    }
    if (
      record.type === "QUEUE" &&
      record.scaling.type === "REQUEST_COUNT" &&
      body.workers?.idleTimeout !== undefined
    ) {
      throw new Problem(
        400,
        "workers.idleTimeout does not apply to a queue endpoint scaling on REQUEST_COUNT",
      );
    }
    if (record.gpu) this.checkGpu(record.gpu);
    for (const [i, flavor] of (record.cpu ?? []).entries()) checkCpuFlavor(flavor, `cpu[${i}]`);
    if (record.registry !== null && !this.registries.has(record.registry)) {
      throw new Problem(400, `registry: no registry credential ${record.registry}`);
    }
  }

  private checkGpu(gpu: NonNullable<RestEndpointRecord["gpu"]>): void {
    const pools = this.pools();
    const unknown = gpu.pools.filter((p) => !pools.includes(p));
    if (unknown.length > 0) {
      throw new Problem(
        400,
        `gpu.pools: unknown pool ${unknown.join(", ")} (GET /v2/catalog/gpus lists ${pools.join(", ")})`,
      );
    }
    for (const type of gpu.excludedTypes ?? []) {
      const entry = this.catalog.find((g) => g.id === type);
      if (!entry?.pool || !gpu.pools.includes(entry.pool)) {
        throw new Problem(
          400,
          `gpu.excludedTypes: ${type} is not a GPU type in the pools ${gpu.pools.join(", ")}`,
        );
      }
    }
    if (gpu.allowedCudaVersions.length > 0 && gpu.minCudaVersion) {
      throw new Problem(400, "gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive");
    }
  }
}

function gpuConfig(gpu: NonNullable<CreateEndpointBody["gpu"]>): NonNullable<RestEndpointRecord["gpu"]> {
  return {
    pools: gpu.pools,
    // Absent rather than empty: the record shows exclusions only when there are some.
    ...(gpu.excludedTypes?.length ? { excludedTypes: gpu.excludedTypes.map((t) => t.trim()) } : {}),
    count: gpu.count ?? 1,
    allowedCudaVersions: gpu.allowedCudaVersions ?? [],
    minCudaVersion: gpu.minCudaVersion ?? null,
  };
}

function updatedGpu(
  current: NonNullable<RestEndpointRecord["gpu"]>,
  body: NonNullable<UpdateEndpointBody["gpu"]>,
): NonNullable<RestEndpointRecord["gpu"]> {
  const gpu = { ...current };
  if (body.pools) {
    gpu.pools = body.pools;
    // pools and excludedTypes are one selection: sending pools without exclusions clears them
    if (body.excludedTypes) gpu.excludedTypes = body.excludedTypes.map((t) => t.trim());
    else delete gpu.excludedTypes;
  }
  if (body.count !== undefined) gpu.count = body.count;
  if (body.allowedCudaVersions !== undefined) gpu.allowedCudaVersions = body.allowedCudaVersions;
  if (body.minCudaVersion !== undefined) gpu.minCudaVersion = body.minCudaVersion || null;
  return gpu;
}

/** A CPU flavor's id and vCPU count, the 400 naming the field (at: `cpu[0]`, `cpu`) when wrong. */
export function checkCpuFlavor(flavor: { id: string; vcpuCount: number }, at: string): void {
  if (!/^cpu\d+[cgm]$/.test(flavor.id)) throw new Problem(400, `${at}.id: unknown CPU flavor ${flavor.id}`);
  if ((flavor.vcpuCount & (flavor.vcpuCount - 1)) !== 0) {
    throw new Problem(400, `${at}.vcpuCount: ${flavor.vcpuCount} is not a power of two`);
  }
}

/** A CPU flavor with its memory: vCPUs times the family's GB per vCPU. */
export function cpuConfig(cpu: { id: string; vcpuCount: number }) {
  const family = /^cpu\d+([cgm])$/.exec(cpu.id)?.[1] ?? "c";
  return { id: cpu.id, vcpuCount: cpu.vcpuCount, memory: cpu.vcpuCount * (RAM_PER_VCPU[family] ?? 2) };
}
