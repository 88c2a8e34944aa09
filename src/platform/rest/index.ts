// The REST API v2 subset on the local platform (test/fixtures/runpod-rest-v2.openapi.json): serverless endpoints
// made from images, their workers, logs and releases, registry credentials and the GPU catalog. Same paths, bodies
// and status codes as RunPod's, so `flash deploy --api-url http://127.0.0.1:8000` takes the path it takes there.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { addSecret, type Logger } from "../../log/index.js";
import { addJsonParser, checkKey } from "../api/http.js";
import type { LogBook } from "../console/logs.js";
import { SseStream } from "../console/sse.js";
import type { LogLine } from "../console/wire.js";
import type { EndpointConfig, WorkerLaunch } from "../state/endpoint.js";
import { newShortId } from "../state/ids.js";
import { type CatalogGpu, catalogEntry, DEFAULT_GPU_CATALOG } from "./catalog.js";
import type { ContainerRuntime } from "./containers.js";
import { Problem, problemHandler } from "./problem.js";
import { violations } from "./schemas.js";

type EndpointType = "QUEUE" | "LOAD_BALANCER";
type Scaling = { type: "QUEUE_DELAY"; queueDelay: number } | { type: "REQUEST_COUNT"; requestCount: number };
type WorkerStatus = "RUNNING" | "IDLE" | "INITIALIZING" | "THROTTLED" | "UNHEALTHY";

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

interface Release {
  id: string;
  version: number;
  createdAt: string;
  diff: { field: string; old: unknown; new: unknown }[];
}

interface Stored {
  record: RestEndpointRecord;
  version: number;
  /** When the current version took effect: workers started before it are stale. */
  versionAt: number;
  releases: Release[];
  /** Working containers of its releases, removed with it. */
  containers: string[];
  /** The image being prepared or running now, so a later PATCH wins over an earlier slow pull. */
  preparing: number;
}

/** A worker of an API-made endpoint, as the platform knows it. */
export interface HostWorker {
  id: string;
  status: WorkerStatus;
  startedAt: number;
  /** A worker that exited on its own (listed as UNHEALTHY): its uptime ends here. */
  exitedAt?: number;
}

/** What the REST routes need from the platform they are part of (src/platform/server.ts). */
export interface RestHost {
  baseUrl(): string;
  /** Queue endpoint: scheduler entry and worker pool (no worker until a launch is set). */
  addQueue(config: EndpointConfig): void;
  /** Changes a queue endpoint's workers, timeouts and env in place. */
  updateQueue(config: EndpointConfig): void;
  /** Load-balanced endpoint: no worker until a launch is set. */
  addLb(init: {
    id: string;
    name: string;
    workers: [number, number];
    executionTimeoutMs: number;
    idleTimeoutMs: number;
    env: Record<string, string>;
  }): void;
  /** Runs the endpoint's workers as `launch`; running ones are replaced. */
  setLaunch(id: string, launch: WorkerLaunch): void;
  remove(id: string): Promise<boolean>;
  workers(id: string): HostWorker[];
  logs: LogBook;
  containers: ContainerRuntime;
  log: Logger;
  apiKey: string;
  catalog?: readonly CatalogGpu[];
}

const RAM_PER_VCPU: Record<string, number> = { c: 2, g: 4, m: 8 };
const DEFAULTS = { timeout: 300_000, idleTimeout: 10, min: 0, max: 3, disk: 20 };

/** The routes; the host's endpoints made here are listed, changed and deleted here. */
export async function restApi(app: FastifyInstance, options: { host: RestHost }): Promise<void> {
  const { host } = options;
  const endpoints = new Map<string, Stored>();
  const registries = new Map<string, { id: string; name: string; username: string; password: string }>();
  const catalog = host.catalog ?? DEFAULT_GPU_CATALOG;
  const log = host.log.child({ subject: "rest" });

  addJsonParser(app, "application/json");
  app.setErrorHandler(problemHandler(log));
  app.addHook("onRequest", async (request) => checkKey(request, host.apiKey, false));

  const found = (request: FastifyRequest): Stored => {
    const { id } = request.params as { id: string };
    const stored = endpoints.get(id);
    if (!stored) throw new Problem(404, `serverless endpoint ${id} not found`);
    return stored;
  };

  app.get("/v2/serverless", async () => ({ endpoints: [...endpoints.values()].map(view) }));
  app.get("/v2/serverless/:id", async (request) => view(found(request)));

  app.post("/v2/serverless", async (request, reply) => {
    const body = request.body as Record<string, unknown> | undefined;
    const invalid = violations("create", body ?? null);
    if (invalid.length > 0) throw new Problem(422, "Request validation failed.", invalid);
    const record = fromCreate(body as unknown as CreateBody);
    check(record, body as unknown as CreateBody);
    const stored: Stored = {
      record,
      version: 1,
      versionAt: Date.now(),
      releases: [],
      containers: [],
      preparing: 0,
    };
    stored.releases.push(release(1, [{ field: "template.imageName", old: null, new: record.image }]));
    endpoints.set(record.id, stored);
    start(stored);
    log.info(`Endpoint ${record.id} (${record.name}) created from ${record.image}`);
    return reply.code(201).send(view(stored));
  });

  app.patch("/v2/serverless/:id", async (request) => {
    const stored = found(request);
    const body = (request.body ?? {}) as UpdateBody;
    const invalid = violations("update", body);
    if (invalid.length > 0) throw new Problem(422, "Request validation failed.", invalid);
    const before = structuredClone(stored.record);
    const next = applyUpdate(before, body);
    check(next, body);
    const diff = differences(before, next);
    stored.record = next;
    if (diff.length > 0) {
      stored.version++;
      stored.releases.unshift(release(stored.version, diff));
      // Workers that keep running (nothing about their container changed) run the new release too.
      if (await restart(stored, before)) stored.versionAt = Date.now();
      log.info(
        `Endpoint ${next.id} (${next.name}) updated to version ${stored.version}: ${diff.map((d) => d.field).join(", ")}`,
      );
    }
    return view(stored);
  });

  app.delete("/v2/serverless/:id", async (request, reply) => {
    const stored = found(request);
    endpoints.delete(stored.record.id);
    await host.remove(stored.record.id);
    for (const container of stored.containers) await host.containers.remove(container);
    log.info(`Endpoint ${stored.record.id} (${stored.record.name}) deleted with its workers`);
    return reply.code(204).send();
  });

  app.get("/v2/serverless/:id/workers", async (request) => {
    const stored = found(request);
    const workers = host.workers(stored.record.id).map((w) => ({
      id: w.id,
      status: w.status,
      isStale: w.startedAt < stored.versionAt,
      version: w.startedAt < stored.versionAt ? stored.version - 1 : stored.version,
      gpuCount: stored.record.gpu ? stored.record.gpu.count : 0,
      image: stored.record.image,
      uptimeSeconds: Math.max(0, Math.floor(((w.exitedAt ?? Date.now()) - w.startedAt) / 1000)),
      startedAt: new Date(w.startedAt).toISOString(),
    }));
    const count = (status: WorkerStatus) => workers.filter((w) => w.status === status).length;
    return {
      workers,
      summary: {
        running: count("RUNNING"),
        idle: count("IDLE"),
        initializing: count("INITIALIZING"),
        throttled: count("THROTTLED"),
        unhealthy: count("UNHEALTHY"),
        total: workers.length,
      },
      endpointVersion: stored.version,
    };
  });

  app.get("/v2/serverless/:id/releases", async (request) => {
    const stored = found(request);
    const workers = host.workers(stored.record.id);
    const onLatest = workers.filter((w) => w.startedAt >= stored.versionAt).length;
    return {
      endpointVersion: stored.version,
      rollout: {
        inProgress: onLatest < workers.length,
        workersOnLatest: onLatest,
        workersTotal: workers.length,
        percentOnLatest: workers.length === 0 ? 0 : Math.round((onLatest * 100) / workers.length),
      },
      releases: stored.releases.map((r) => ({
        id: r.id,
        version: r.version,
        source: "MANUAL",
        buildId: null,
        createdByUserId: null,
        workerCount: r.version === stored.version ? onLatest : 0,
        createdAt: r.createdAt,
        diff: r.diff,
      })),
    };
  });

  app.get("/v2/serverless/:id/workers/:workerId/logs", async (request, reply) =>
    streamLogs(request, reply, found(request)),
  );

  app.get("/v2/registries", async () => ({
    registries: [...registries.values()].map(({ id, name }) => ({ id, name })),
  }));
  app.post("/v2/registries", async (request, reply) => {
    const invalid = violations("registry", request.body ?? null);
    if (invalid.length > 0) throw new Problem(422, "Request validation failed.", invalid);
    const body = request.body as { name: string; username: string; password: string };
    addSecret(body.password);
    const registry = { id: newShortId(8), ...body };
    registries.set(registry.id, registry);
    return reply.code(201).send({ id: registry.id, name: registry.name });
  });
  app.get("/v2/registries/:id", async (request) => {
    const registry = registries.get((request.params as { id: string }).id);
    if (!registry) throw new Problem(404, "registry not found");
    return { id: registry.id, name: registry.name };
  });
  app.delete("/v2/registries/:id", async (request, reply) => {
    const { id } = request.params as { id: string };
    if (!registries.has(id)) throw new Problem(404, "registry not found");
    const user = [...endpoints.values()].find((s) => s.record.registry === id);
    if (user) throw new Problem(400, `registry credential ${id} is in use by endpoint ${user.record.id}`);
    registries.delete(id);
    return reply.code(204).send();
  });

  app.get("/v2/catalog/gpus", async () => ({ gpus: catalog.map(catalogEntry) }));

  // ---- the endpoint's life on the platform

  /** Creates the platform side, then pulls the image and starts its workers from it. */
  function start(stored: Stored): void {
    const { record } = stored;
    if (record.type === "QUEUE") host.addQueue(queueConfig(record));
    else host.addLb(lbInit(record));
    prepare(stored);
  }

  /** Applies a changed record; true when its workers are replaced (they run a new container or settings). */
  async function restart(stored: Stored, before: RestEndpointRecord): Promise<boolean> {
    const { record } = stored;
    if (record.type === "QUEUE") {
      host.updateQueue(queueConfig(record));
    } else {
      await host.remove(record.id);
      host.addLb(lbInit(record));
    }
    const sameContainer =
      before.image === record.image && before.args === record.args && before.registry === record.registry;
    // A queue endpoint's new env or settings reach new workers through the launch; LB ones were remade above.
    if (
      !sameContainer ||
      record.type === "LOAD_BALANCER" ||
      JSON.stringify(before.env) !== JSON.stringify(record.env)
    ) {
      prepare(stored);
      return true;
    }
    return false;
  }

  /** Pulls and makes the container in the background; the newest request wins. */
  function prepare(stored: Stored): void {
    const ticket = ++stored.preparing;
    const { record } = stored;
    const registry = record.registry ? registries.get(record.registry) : undefined;
    host.containers
      .prepare({
        image: record.image,
        ...(record.args ? { args: record.args } : {}),
        ...(registry ? { creds: { username: registry.username, password: registry.password } } : {}),
        name: `flash-${record.id}-v${stored.version}-${ticket}`,
      })
      .then((prepared) => {
        if (prepared.container) stored.containers.push(prepared.container);
        if (endpoints.get(record.id) !== stored || ticket !== stored.preparing) return;
        host.setLaunch(record.id, prepared.launch);
      })
      .catch((err: Error) => {
        log.error(`Endpoint ${record.id} (${record.name}): cannot run ${record.image}: ${err.message}`);
      });
  }

  function streamLogs(request: FastifyRequest, reply: FastifyReply, stored: Stored): void {
    const { workerId } = request.params as { workerId: string };
    const query = request.query as { tail?: string; source?: string };
    const tail = query.tail === undefined ? 100 : Number(query.tail);
    if (!Number.isInteger(tail) || tail < 0 || tail > 5000) {
      throw new Problem(400, `tail must be a whole number from 0 to 5000, got ${query.tail}`);
    }
    if (query.source !== undefined && query.source !== "container" && query.source !== "system") {
      throw new Problem(400, `source must be container or system, got ${query.source}`);
    }
    const about = (line: LogLine) => line.subject === workerId || line.workerId === workerId;
    const backlog = host.logs.recent(about, 5000);
    const live = host.workers(stored.record.id).some((w) => w.id === workerId);
    if (!live && backlog.length === 0) {
      throw new Problem(404, `worker ${workerId} of endpoint ${stored.record.id} not found`);
    }
    const source = (line: LogLine) =>
      line.subject === workerId && !line.message.startsWith("Worker:") ? "container" : "system";
    const wanted = (line: LogLine) =>
      about(line) && (query.source === undefined || source(line) === query.source);
    const stream = new SseStream(reply);
    const send = (line: LogLine) => {
      const ts = new Date(line.time).toISOString();
      stream.sendRaw(
        `id: ${ts}/${String(line.seq).padStart(12, "0")}\ndata: ${JSON.stringify({ ts, source: source(line), line: line.message })}\n\n`,
      );
    };
    for (const line of backlog.filter(wanted).slice(-tail || backlog.length)) if (tail > 0) send(line);
    const off = host.logs.onLine((line) => {
      if (wanted(line)) send(line);
    });
    stream.onClose(off);
  }

  // ---- bodies

  function fromCreate(body: CreateBody): RestEndpointRecord {
    if (body.templateId !== undefined) {
      throw new Problem(400, "templateId: the local platform has no templates; send image instead");
    }
    if (body.image === undefined) {
      throw new Problem(422, "Request validation failed.", ["$: must have required property 'image'"]);
    }
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
    else record.gpu = gpuConfig(body.gpu ?? { pools: allPools() });
    return record;
  }

  function applyUpdate(record: RestEndpointRecord, body: UpdateBody): RestEndpointRecord {
    if (body.templateId !== undefined) {
      throw new Problem(400, "templateId: the local platform has no templates; send image instead");
    }
    const next = { ...record };
    for (const field of [
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
    ] as const) {
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
      const gpu = { ...record.gpu };
      if (body.gpu.pools) {
        gpu.pools = body.gpu.pools;
        // pools and excludedTypes are one selection: sending pools without exclusions clears them
        if (body.gpu.excludedTypes) gpu.excludedTypes = body.gpu.excludedTypes.map((t) => t.trim());
        else delete gpu.excludedTypes;
      }
      if (body.gpu.count !== undefined) gpu.count = body.gpu.count;
      if (body.gpu.allowedCudaVersions !== undefined) gpu.allowedCudaVersions = body.gpu.allowedCudaVersions;
      if (body.gpu.minCudaVersion !== undefined) gpu.minCudaVersion = body.gpu.minCudaVersion || null;
      next.gpu = gpu;
    }
    return next;
  }

  function gpuConfig(gpu: NonNullable<CreateBody["gpu"]>): NonNullable<RestEndpointRecord["gpu"]> {
    return {
      pools: gpu.pools,
      ...(gpu.excludedTypes?.length ? { excludedTypes: gpu.excludedTypes.map((t) => t.trim()) } : {}),
      count: gpu.count ?? 1,
      allowedCudaVersions: gpu.allowedCudaVersions ?? [],
      minCudaVersion: gpu.minCudaVersion ?? null,
    };
  }

  function allPools(): string[] {
    return [...new Set(catalog.flatMap((g) => (g.pool ? [g.pool] : [])))].sort();
  }

  /** The rules the schema cannot say; each a 400 naming the field. */
  function check(record: RestEndpointRecord, body: { workers?: { idleTimeout?: number } }): void {
    const { workers, gpu, cpu } = record;
    if (workers.min > workers.max) {
      throw new Problem(400, `workers.min (${workers.min}) cannot exceed workers.max (${workers.max})`);
    }
    if (record.type === "LOAD_BALANCER" && record.scaling.type !== "REQUEST_COUNT") {
      throw new Problem(422, "Request validation failed.", [
        "$.scaling.type: load-balanced endpoints must scale on REQUEST_COUNT",
      ]);
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
    if (gpu) {
      const pools = allPools();
      const unknown = gpu.pools.filter((p) => !pools.includes(p));
      if (unknown.length > 0) {
        throw new Problem(
          400,
          `gpu.pools: unknown pool ${unknown.join(", ")} (GET /v2/catalog/gpus lists ${pools.join(", ")})`,
        );
      }
      for (const type of gpu.excludedTypes ?? []) {
        const entry = catalog.find((g) => g.id === type);
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
    if (cpu) {
      for (const [i, flavor] of cpu.entries()) {
        if (!/^cpu\d+[cgm]$/.test(flavor.id))
          throw new Problem(400, `cpu[${i}].id: unknown CPU flavor ${flavor.id}`);
        if ((flavor.vcpuCount & (flavor.vcpuCount - 1)) !== 0) {
          throw new Problem(400, `cpu[${i}].vcpuCount: ${flavor.vcpuCount} is not a power of two`);
        }
      }
    }
    if (record.registry !== null && !registries.has(record.registry)) {
      throw new Problem(400, `registry: no registry credential ${record.registry}`);
    }
  }

  function cpuConfig(cpu: { id: string; vcpuCount: number }) {
    const family = /^cpu\d+([cgm])$/.exec(cpu.id)?.[1] ?? "c";
    return { id: cpu.id, vcpuCount: cpu.vcpuCount, memory: cpu.vcpuCount * (RAM_PER_VCPU[family] ?? 2) };
  }

  function queueConfig(record: RestEndpointRecord): EndpointConfig {
    return {
      id: record.id,
      name: record.name,
      executionTimeoutMs: record.timeout,
      maxRetries: 3,
      workers: [record.workers.min, record.workers.max],
      idleTimeoutMs: record.workers.idleTimeout * 1000,
      env: record.env,
    };
  }

  function lbInit(record: RestEndpointRecord) {
    return {
      id: record.id,
      name: record.name,
      workers: [record.workers.min, record.workers.max] as [number, number],
      executionTimeoutMs: record.timeout,
      idleTimeoutMs: record.workers.idleTimeout * 1000,
      env: record.env,
    };
  }

  function view(stored: Stored) {
    const { record } = stored;
    const base = `${host.baseUrl()}/v2/${record.id}`;
    const lbBase = `${host.baseUrl()}/lb/${record.id}`;
    const { workers, gpu, ...rest } = record;
    const omitIdle = record.type === "QUEUE" && record.scaling.type === "REQUEST_COUNT";
    return {
      ...rest,
      ...(record.cpu ? {} : { gpu }),
      workers: omitIdle ? { min: workers.min, max: workers.max } : workers,
      requestUrls:
        record.type === "QUEUE"
          ? {
              run: `${base}/run`,
              runSync: `${base}/runsync`,
              status: `${base}/status/{job_id}`,
              stream: `${base}/stream/{job_id}`,
              cancel: `${base}/cancel/{job_id}`,
              retry: `${base}/retry/{job_id}`,
              purgeQueue: `${base}/purge-queue`,
              health: `${base}/health`,
            }
          : { base: lbBase, health: `${lbBase}/ping` },
    };
  }
}

function release(version: number, diff: Release["diff"]): Release {
  return { id: newShortId(8), version, createdAt: new Date().toISOString(), diff };
}

/** Changed fields, named as releases name them (template.* for the container's). */
function differences(before: RestEndpointRecord, after: RestEndpointRecord): Release["diff"] {
  const names: Partial<Record<keyof RestEndpointRecord, string>> = {
    image: "template.imageName",
    args: "template.dockerArgs",
    env: "template.env",
    disk: "template.containerDiskInGb",
  };
  const out: Release["diff"] = [];
  for (const key of Object.keys(after) as (keyof RestEndpointRecord)[]) {
    if (JSON.stringify(before[key]) !== JSON.stringify(after[key])) {
      out.push({ field: names[key] ?? key, old: before[key] ?? null, new: after[key] ?? null });
    }
  }
  return out;
}

interface CreateBody {
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

type UpdateBody = Partial<Omit<CreateBody, "type" | "gpu">> & {
  gpu?: Partial<NonNullable<CreateBody["gpu"]>>;
};
