// Pods made through REST v2 (/v2/pods): records made from create bodies and changed by update bodies under the
// rules the schema cannot say, their status and the actions it allows.
import { newShortId } from "./ids.js";
import { Problem } from "./problem.js";
import type { Registries } from "./registries.js";
import { checkCpuFlavor, cpuConfig } from "./rest-endpoints.js";

export type PodStatus = "PROVISIONING" | "STARTING" | "RUNNING" | "EXITED" | "ERROR" | "TERMINATED";
export type PodAction = "start" | "stop" | "restart" | "terminate";

/** One exposed port: `8000/http` (through the proxy) or `22/tcp` (forwarded to a public port). */
export interface PodPort {
  private: number;
  type: "http" | "tcp";
}

export interface PodMounts {
  persistent?: { size: number; path: string };
  network?: { volumeId: string; path: string }[];
}

/** A Pod as it is stored: its settings, and what the platform has made of it so far. */
export interface PodRecord {
  id: string;
  name: string;
  image: string;
  args: string;
  disk: number;
  env: Record<string, string>;
  ports: string[];
  registry: string | null;
  gpu?: { id: string; count: number };
  cpu?: { id: string; vcpuCount: number; memory: number };
  cloud: "SECURE" | "COMMUNITY";
  mounts: PodMounts;
  locked: boolean;
  globalNetworking: boolean;
  createdAt: string;
  status: PodStatus;
  /** When its container last started (ms); null until then. */
  startedAt: number | null;
  /** Public port of each forwarded tcp port, by private port, while it runs. */
  tcp: Map<number, number>;
  /** Why it is in ERROR (a pull or start that failed). */
  error?: string;
}

export interface CreatePodBody {
  name: string;
  image?: string;
  templateId?: string;
  args?: string;
  disk?: number;
  env?: Record<string, string>;
  ports?: string[];
  registry?: string | null;
  cloud?: "SECURE" | "COMMUNITY";
  gpu?: { id: string; count?: number; allowedCudaVersions?: string[]; minCudaVersion?: string };
  cpu?: { id: string; vcpuCount: number };
  dataCenterIds?: string[];
  globalNetworking?: boolean;
  mounts?: PodMounts;
  startJupyter?: boolean;
  startSsh?: boolean;
}

export type UpdatePodBody = Partial<
  Pick<CreatePodBody, "name" | "image" | "args" | "disk" | "env" | "ports" | "registry" | "mounts">
> & { templateId?: string; locked?: boolean; globalNetworking?: boolean };

/** Fields whose change needs a new container (the running one is replaced). */
const CONTAINER_FIELDS = ["image", "args", "disk", "env", "ports", "registry"] as const;

/** The actions a status allows (the document's podAction). */
export function podActions(status: PodStatus): PodAction[] {
  switch (status) {
    case "RUNNING":
      return ["stop", "restart", "terminate"];
    case "EXITED":
    case "ERROR":
      return ["start", "terminate"];
    case "PROVISIONING":
    case "STARTING":
      return ["stop", "terminate"];
    default:
      return [];
  }
}

/** `8000/http` → {private: 8000, type: "http"}; throws the 400 naming the entry otherwise. */
export function parsePort(entry: string, at: string): PodPort {
  const m = /^(\d{1,5})\/(http|tcp)$/.exec(entry);
  const port = Number(m?.[1]);
  if (!m || port < 1 || port > 65535) {
    throw new Problem(400, `${at}: "${entry}" is not <port>/http or <port>/tcp (port 1-65535)`);
  }
  return { private: port, type: m[2] as PodPort["type"] };
}

export class Pods {
  private readonly pods = new Map<string, PodRecord>();

  constructor(
    /** GPU type ids of the catalog. */
    private readonly gpuTypes: readonly string[],
    private readonly registries: Registries,
  ) {}

  list(): PodRecord[] {
    return [...this.pods.values()];
  }

  /** The Pod, or a 404. */
  get(id: string): PodRecord {
    const pod = this.pods.get(id);
    if (!pod) throw new Problem(404, `pod ${id} not found`);
    return pod;
  }

  find(id: string): PodRecord | undefined {
    return this.pods.get(id);
  }

  /** A Pod from a create body (already valid against the schema), PROVISIONING. */
  create(body: CreatePodBody): PodRecord {
    if (body.templateId !== undefined) {
      throw new Problem(400, "templateId: the local platform has no templates; send image instead");
    }
    if (body.gpu && body.cpu) throw new Problem(400, "gpu and cpu are mutually exclusive: send one");
    if (!body.gpu && !body.cpu) throw new Problem(400, "send gpu or cpu: a Pod runs on one of them");
    const pod: PodRecord = {
      id: newShortId(),
      name: body.name,
      image: body.image ?? "",
      args: body.args ?? "",
      disk: body.disk ?? 50,
      env: body.env ?? {},
      ports: body.ports ?? [],
      registry: body.registry ?? null,
      cloud: body.cloud ?? "SECURE",
      mounts: body.mounts ?? {},
      locked: false,
      globalNetworking: body.globalNetworking ?? false,
      createdAt: new Date().toISOString(),
      status: "PROVISIONING",
      startedAt: null,
      tcp: new Map(),
    };
    if (body.gpu) {
      this.checkGpu(body.gpu);
      pod.gpu = { id: body.gpu.id, count: body.gpu.count ?? 1 };
    }
    if (body.cpu) pod.cpu = cpuConfig(body.cpu);
    this.check(pod);
    this.pods.set(pod.id, pod);
    return pod;
  }

  /** Applies an update body (already valid against the schema); true when its container must be remade. */
  update(pod: PodRecord, body: UpdatePodBody): boolean {
    if (body.templateId !== undefined) {
      throw new Problem(400, "templateId: the local platform has no templates; send image instead");
    }
    const next: PodRecord = { ...pod };
    for (const field of [...CONTAINER_FIELDS, "name", "locked", "globalNetworking"] as const) {
      if (body[field] !== undefined) (next as unknown as Record<string, unknown>)[field] = body[field];
    }
    if (body.mounts) next.mounts = { ...pod.mounts, ...body.mounts };
    this.check(next);
    const remade = CONTAINER_FIELDS.some((f) => JSON.stringify(pod[f]) !== JSON.stringify(next[f]));
    Object.assign(pod, next);
    return remade;
  }

  /** Throws the 409 of an action its status does not allow (or a locked Pod's stop). */
  checkAction(pod: PodRecord, action: PodAction): void {
    if (!podActions(pod.status).includes(action)) {
      throw new Problem(
        409,
        `pod ${pod.id} is ${pod.status}: ${action} is not one of its actions (${podActions(pod.status).join(", ")})`,
      );
    }
    if (pod.locked && (action === "stop" || action === "restart")) {
      throw new Problem(409, `pod ${pod.id} is locked: unlock it (PATCH {"locked": false}) to ${action} it`);
    }
  }

  /** Forgets the Pod (its container is the caller's to stop). */
  delete(pod: PodRecord): void {
    this.pods.delete(pod.id);
    pod.status = "TERMINATED";
  }

  /** What pulls with this registry credential, if anything. */
  usingRegistry(registry: string): string | undefined {
    const user = this.list().find((p) => p.registry === registry);
    return user ? `pod ${user.id}` : undefined;
  }

  private checkGpu(gpu: NonNullable<CreatePodBody["gpu"]>): void {
    if (!this.gpuTypes.includes(gpu.id)) {
      throw new Problem(400, `gpu.id: unknown GPU type ${gpu.id} (GET /v2/catalog/gpus lists the ids)`);
    }
    if ((gpu.allowedCudaVersions?.length ?? 0) > 0 && gpu.minCudaVersion) {
      throw new Problem(400, "gpu.allowedCudaVersions and gpu.minCudaVersion are mutually exclusive");
    }
  }

  /** The rules the schema cannot say; each a 400 naming the field. */
  private check(pod: PodRecord): void {
    if (!pod.image) throw new Problem(400, "image: a Pod runs an image; send one");
    const seen = new Set<number>();
    for (const [i, entry] of pod.ports.entries()) {
      const port = parsePort(entry, `ports[${i}]`);
      if (seen.has(port.private))
        throw new Problem(400, `ports[${i}]: port ${port.private} is exposed twice`);
      seen.add(port.private);
    }
    if (pod.mounts.persistent && pod.mounts.network) {
      throw new Problem(400, "mounts: persistent and network are mutually exclusive");
    }
    if (pod.mounts.network?.length) {
      throw new Problem(400, "mounts.network: the local platform has no network volumes");
    }
    if (pod.cpu && pod.mounts.persistent)
      throw new Problem(400, "mounts.persistent: CPU Pods cannot have one");
    if (pod.cpu) checkCpuFlavor(pod.cpu, "cpu");
    if (pod.registry !== null && !this.registries.has(pod.registry)) {
      throw new Problem(400, `registry: no registry credential ${pod.registry}`);
    }
  }
}

/** Its exposed ports, parsed (the record's were checked when it was stored). */
export function podPorts(pod: PodRecord): PodPort[] {
  return pod.ports.map((entry, i) => parsePort(entry, `ports[${i}]`));
}
