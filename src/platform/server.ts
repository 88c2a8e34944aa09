// startPlatform(): the local platform's API, console and REST v2 on one server, and its endpoints' workers.
import { existsSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import Fastify from "fastify";
import type { ContainerToolOptions } from "../containers/tool.js";
import { isLoopback, isLoopbackAuthority } from "../http/loopback.js";
import { addSecret, createLogger, type Logger } from "../log/index.js";
import { ConfigError } from "../options/index.js";
import { keepTickShapes } from "../tick-shapes.js";
import { clientApi } from "./api/client-api.js";
import type { PlatformContext } from "./api/context.js";
import { FILE_LIFETIME_MS, filesApi } from "./api/files.js";
import { errorHandler, HttpError } from "./api/http.js";
import { openaiApi } from "./api/openai.js";
import { WEBHOOK_DEFAULTS, type WebhookOptions, WebhookSender } from "./api/webhooks.js";
import { workerApi } from "./api/worker-api.js";
import { type WorkerCalls, workerCalls } from "./api/worker-calls.js";
import { consolePlugin, LogBook, teeLogger } from "./console/index.js";
import { type CatalogGpu, DEFAULT_GPU_CATALOG } from "./rest/catalog.js";
import { ContainerRuntime } from "./rest/containers.js";
import { type RestHost, restApi } from "./rest/index.js";
import { defaultMemoryBudget } from "./state/budget.js";
import type { EndpointState } from "./state/endpoint.js";
import type { EndpointInfo, EndpointInit } from "./state/endpoint-init.js";
import { newApiKey } from "./state/ids.js";
import { DEFAULT_RETENTION, type Retention } from "./state/jobs.js";
import { PodLife } from "./state/pod-life.js";
import { Pods, podPorts } from "./state/pods.js";
import { Registries } from "./state/registries.js";
import { Scheduler } from "./state/scheduler.js";
import { PlatformEndpoints } from "./workers/endpoints.js";
import {
  type LbEndpointInfo,
  type LbEndpointInit,
  LbEndpoints,
  type LbOptions,
  lbHostRewrite,
  lbProxy,
} from "./workers/lb-proxy.js";
import { PodProxy, type ProxiedPod } from "./workers/pod-proxy.js";
import { PodRunner } from "./workers/pod-runner.js";
import type { WorkerPool } from "./workers/pool.js";
import { RestEndpointHost } from "./workers/rest-host.js";

export interface PlatformOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  /** The key clients (Bearer) and workers (raw) must send; generated when not given. */
  apiKey?: string;
  /**
   * runpod-python's local API server paths (`/run`, `/runsync`, `/status/<id>`, `/stream/<id>`, …) at the
   * root, for this endpoint; without a key while the platform listens on loopback only.
   */
  rootEndpoint?: string;
  logger?: Logger;
  /** How long finished jobs stay visible (default /run 30 min, /runsync 1 min). */
  retention?: Partial<Retention>;
  /** A worker holding jobs that makes no request for this long is lost (default 30 s). */
  workerLostMs?: number;
  /** How long job-take, job-stop and /stream hold a request (default 30 s). */
  longPollMs?: number;
  /** RUNPOD_PING_INTERVAL given to spawned workers (default 10 s). */
  pingIntervalMs?: number;
  /** How long a stopped worker may finish its jobs before it is killed (default 30 s). */
  workerStopGraceMs?: number;
  /** How long a load-balanced request waits for a ready worker before a 503 (default 2 min, RunPod's). */
  lbReadyWaitMs?: number;
  /** A load-balanced request's whole time on its worker before a 504 (default 5.5 min, RunPod's). */
  lbProcessingTimeoutMs?: number;
  /** Load-balanced request and answer bodies past this are refused (default 30 MB, RunPod's). */
  lbPayloadLimitBytes?: number;
  /** How long a strict-affinity request waits for its busy worker before the 400 (default 5 min, RunPod's ~5). */
  lbAffinityWaitMs?: number;
  /**
   * RUNPOD_INIT_TIMEOUT: a queue worker that has not asked for a job this long after it was started is
   * unhealthy and killed (default 420 s, RunPod's 7 minutes: serverless/development/optimization).
   */
  workerInitTimeoutMs?: number;
  webhooks?: Partial<WebhookOptions>;
  /** How long files workers store stay reachable (default 7 days, as public image URLs). */
  fileLifetimeMs?: number;
  /**
   * Bytes queued and retained job payloads may hold (default a quarter of V8's heap limit): a request past it is
   * refused with 429 while unfinished jobs fill it, finished jobs are forgotten oldest first to make room.
   */
  memoryBytes?: number;
  /** Endpoints to create at start. */
  endpoints?: EndpointInit[];
  /** Load-balanced endpoints to create at start, served under `/lb/<id>/`. */
  loadBalanced?: LbEndpointInit[];
  /** The worker argv for a handler file (default: `node <flash> start <file>`). */
  workerCommand?: (file: string) => string[];
  /** The container tool endpoints deployed through the REST API run their images with (found when first needed). */
  containers?: ContainerToolOptions;
  /** GET /v2/catalog/gpus (default: RunPod's serverless pools and their cards). */
  gpuCatalog?: readonly CatalogGpu[];
}

export interface Platform {
  /** Base URL, e.g. http://127.0.0.1:8000; the API lives under `${url}/v2/<endpoint_id>/`. */
  url: string;
  host: string;
  port: number;
  apiKey: string;
  scheduler: Scheduler;
  createEndpoint(init: EndpointInit): EndpointInfo;
  deleteEndpoint(id: string): Promise<boolean>;
  listEndpoints(): EndpointInfo[];
  /** The worker pool of an endpoint that has a worker command. */
  pool(endpointId: string): WorkerPool | undefined;
  /** Creates a load-balanced endpoint: HTTP workers behind `${url}/lb/<id>/`. */
  createLbEndpoint(init: LbEndpointInit): LbEndpointInfo;
  /** The load-balanced endpoints, by id. */
  lb: LbEndpoints;
  /** The environment that points a worker at this platform (docs/protocol.md §2.1). */
  workerEnv(endpointId: string, workerId: string): Record<string, string>;
  /** The worker API as calls in this process, for a worker that runs here (--rp_serve_api). */
  workerCalls(endpointId: string, workerId: string): WorkerCalls;
  /** Stops accepting requests, ends long-polls, stops the workers, waits for webhooks under way. */
  close(): Promise<void>;
  /** Kills every worker process now, without the grace period close() gives jobs in flight. */
  killWorkers(): void;
}

/** The client paths runpod-python's local API server answers at its root (`--rp_serve_api`). */
const RUNPOD_PYTHON_PATHS =
  /^\/(run|runsync|health|purge-queue|(status|status-sync|stream|cancel|retry)\/[^/?]+)\/?(\?|$)/;

/** How long a stopped worker may finish its jobs before it is killed (the runtime's own grace period). */
export const WORKER_STOP_GRACE_MS = 30_000;

/** A cold start over 7 minutes is unhealthy on RunPod (serverless/development/optimization), as in the runtime's config. */
export const WORKER_INIT_TIMEOUT_MS = 420_000;

/**
 * `node <flash> start <file>`: the built CLI when there is one (worker threads need no loader there),
 * else the sources through tsx.
 */
export function defaultWorkerCommand(file: string): string[] {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
  const built = resolve(root, "dist/cli/main.js");
  if (existsSync(built)) return [process.execPath, built, "start", file];
  return [
    process.execPath,
    "--import",
    import.meta.resolve("tsx"),
    resolve(root, "src/cli/main.ts"),
    "start",
    file,
  ];
}

/**
 * The server's rewriteUrl: `<id>.localhost` hosts to `/lb/<id>/`, and runpod-python's root paths to `rootEndpoint`;
 * a keyless request to those whose Host is not a loopback name goes into `foreign`, refused by foreignHostCheck.
 */
function urlRewrite(
  rootEndpoint: string | undefined,
  keyless: boolean,
  apiKey: string,
  foreign: WeakSet<IncomingMessage>,
) {
  return (req: IncomingMessage): string => {
    const url = lbHostRewrite(req);
    if (rootEndpoint === undefined || url !== req.url || !RUNPOD_PYTHON_PATHS.test(url)) return url;
    // Its users send no key (runpod-python's server has none); only loopback callers can reach it so, and only by a
    // loopback name: a web page whose name was rebound to 127.0.0.1 sends its own Host.
    if (keyless && req.headers.authorization === undefined) {
      if (isLoopbackAuthority(req.headers.host ?? "")) req.headers.authorization = `Bearer ${apiKey}`;
      else foreign.add(req);
    }
    return `/v2/${rootEndpoint}${url}`;
  };
}

/** 403 for the keyless requests urlRewrite found sent to a name that is not loopback (DNS rebinding). */
function foreignHostCheck(foreign: WeakSet<IncomingMessage>) {
  return async (request: { raw: IncomingMessage; headers: IncomingMessage["headers"] }): Promise<void> => {
    if (!foreign.has(request.raw)) return;
    throw new HttpError(
      403,
      `Host ${JSON.stringify(request.headers.host ?? "")} is not this machine's loopback: the paths that need no API key answer only requests sent to localhost, 127.0.0.1 or [::1] (a web page cannot reach them by DNS rebinding); send the API key to use another name`,
    );
  };
}

/** The load balancer's limits: RunPod's unless the options say otherwise. */
function lbOptions(
  options: PlatformOptions,
  log: Logger,
  workerCommand: (file: string) => string[],
): LbOptions {
  return {
    log,
    workerCommand,
    stopGraceMs: options.workerStopGraceMs ?? WORKER_STOP_GRACE_MS,
    readyWaitMs: options.lbReadyWaitMs,
    affinityWaitMs: options.lbAffinityWaitMs,
    ...(options.lbProcessingTimeoutMs === undefined
      ? {}
      : { processingTimeoutMs: options.lbProcessingTimeoutMs }),
    payloadLimitBytes: options.lbPayloadLimitBytes,
  };
}

/** The key clients and workers must send: the one given, or a fresh one when the platform listens on loopback. */
function platformKey(options: PlatformOptions, bindHost: string): string {
  // A generated key is printed for the user; on a non-loopback interface it must be one they chose.
  if (options.apiKey === undefined && !isLoopback(bindHost)) {
    throw new ConfigError(
      `Refusing to serve on ${bindHost} without an API key you chose: pass --api-key (or FLASH_API_KEY), or use 127.0.0.1`,
    );
  }
  const apiKey = options.apiKey ?? newApiKey();
  // Workers get it in their environment; their start commands are logged without it (src/log/redact.ts).
  addSecret(apiKey);
  return apiKey;
}

/** Starts the local platform: the serverless endpoint API on localhost, and the workers of its endpoints. */
export async function startPlatform(options: PlatformOptions = {}): Promise<Platform> {
  // The console keeps a copy of every line (workers' output included) for its worker logs view.
  const logs = new LogBook();
  const log = teeLogger(options.logger ?? createLogger({ level: "INFO", json: false }), logs);
  const platformLog = log.child({ subject: "platform" });
  const bindHost = options.host ?? "127.0.0.1";
  const apiKey = platformKey(options, bindHost);
  const scheduler = new Scheduler({
    retention: { ...DEFAULT_RETENTION, ...options.retention },
    workerLostMs: options.workerLostMs ?? 30_000,
    memoryBytes: options.memoryBytes ?? defaultMemoryBudget(),
    logger: log,
  });
  const webhooks = new WebhookSender({ ...WEBHOOK_DEFAULTS, ...options.webhooks }, log);
  scheduler.onTerminal((job) => webhooks.send(job));
  const workerCommand = options.workerCommand ?? defaultWorkerCommand;
  const lb = new LbEndpoints(lbOptions(options, log, workerCommand));
  let baseUrl = "";
  let host = "";
  const endpoints = new PlatformEndpoints({
    scheduler,
    lb,
    log,
    apiKey,
    baseUrl: () => baseUrl,
    workerCommand,
    stopGraceMs: options.workerStopGraceMs ?? WORKER_STOP_GRACE_MS,
    initTimeoutMs: options.workerInitTimeoutMs ?? WORKER_INIT_TIMEOUT_MS,
    pingIntervalMs: options.pingIntervalMs ?? 10_000,
  });
  const pools = endpoints.pools;
  const ctx: PlatformContext = {
    scheduler,
    apiKey,
    log: platformLog,
    longPollMs: options.longPollMs ?? 30_000,
    initializingWorkers: (endpoint: EndpointState) => pools.get(endpoint.id)?.initializing ?? 0,
    deadWorkers: (endpoint: EndpointState) => pools.get(endpoint.id)?.dead.length ?? 0,
  };

  const registries = new Registries();
  const catalog = options.gpuCatalog ?? DEFAULT_GPU_CATALOG;
  const pods = new Pods(
    catalog.map((g) => g.id),
    registries,
  );
  // Requests for `/pods/<pod_id>/<port>/` or `<pod_id>-<port>.localhost` go to the Pod's container; the rest to the platform's routes.
  const podProxy = new PodProxy((id) => podTarget(pods, id));
  const foreignHosts = new WeakSet<IncomingMessage>();
  const rewriteUrl = urlRewrite(options.rootEndpoint, isLoopback(bindHost), apiKey, foreignHosts);
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    rewriteUrl,
    serverFactory: (handler) => createServer((req, res) => podProxy.handle(req, res) || handler(req, res)),
  });
  app.setErrorHandler(errorHandler(platformLog));
  app.addHook("onRequest", foreignHostCheck(foreignHosts));
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `No route ${request.method} ${request.url.split("?")[0]}` }),
  );
  // Client and worker routes share the /v2/<endpoint_id>/ prefix but not their auth or body parsers.
  await app.register(clientApi, { prefix: "/v2/:endpointId", ...ctx });
  await app.register(workerApi, { prefix: "/v2/:endpointId", ...ctx });
  await app.register(openaiApi, { prefix: "/v2/:endpointId/openai/v1", ...ctx });
  await app.register(lbProxy, {
    ctx,
    endpoints: lb,
    claimUpgrade: (req, socket, head) => podProxy.upgrade(req, socket, head),
  });
  await app.register(filesApi, {
    ctx,
    lifetimeMs: options.fileLifetimeMs ?? FILE_LIFETIME_MS,
    baseUrl: () => baseUrl,
  });
  await app.register(consolePlugin, { ctx, logs, pool: (id) => pools.get(id), lb });

  // Endpoints made through the REST API run their image's workers in containers.
  const containers = new ContainerRuntime(options.containers ?? {}, log.child({ subject: "containers" }));
  const podRunner = new PodRunner({
    log,
    bindHost,
    publicIp: () => host,
    stopGraceMs: options.workerStopGraceMs ?? WORKER_STOP_GRACE_MS,
  });
  const restHost: RestHost = {
    endpoints: new RestEndpointHost(endpoints, scheduler, lb),
    registries,
    pods,
    podLife: new PodLife(podRunner, containers, registries, log.child({ subject: "rest" })),
    publicIp: () => host,
    baseUrl: () => baseUrl,
    logs,
    containers,
    log,
    apiKey,
    catalog,
  };
  await app.register(restApi, { host: restHost });

  keepTickShapes();
  await app.listen({ host: bindHost, port: options.port ?? 0 });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("The platform has no TCP address");
  host = connectHost(address.address);
  baseUrl = `http://${host}:${address.port}`;
  for (const init of options.endpoints ?? []) endpoints.create(init);
  for (const init of options.loadBalanced ?? []) endpoints.createLb(init);

  let closing: Promise<void> | undefined;
  return {
    url: baseUrl,
    host,
    port: address.port,
    apiKey,
    scheduler,
    createEndpoint: (init) => endpoints.create(init),
    deleteEndpoint: (id) => endpoints.remove(id),
    listEndpoints: () => endpoints.list(),
    pool: (id) => pools.get(id),
    createLbEndpoint: (init) => endpoints.createLb(init),
    lb,
    workerEnv: (endpointId, workerId) => endpoints.workerEnv(endpointId, workerId),
    workerCalls: (endpointId, workerId) => workerCalls(ctx, endpointId, workerId),
    killWorkers: () => endpoints.killAll(),
    close() {
      closing ??= (async () => {
        scheduler.close();
        await endpoints.close();
        await podRunner.close();
        await containers.close();
        await app.close();
        await webhooks.close();
      })();
      return closing;
    },
  };
}

/** A Pod as its HTTP proxy sees it: its status and http ports. */
function podTarget(pods: Pods, id: string): ProxiedPod | undefined {
  const pod = pods.find(id);
  if (!pod) return undefined;
  return {
    status: pod.status,
    httpPorts: podPorts(pod).flatMap((p) => (p.type === "http" ? [p.private] : [])),
  };
}

/** Where clients and workers reach a server bound to this address (a wildcard is reached on loopback). */
function connectHost(address: string): string {
  if (address === "0.0.0.0") return "127.0.0.1";
  if (address === "::") return "[::1]";
  return address.includes(":") ? `[${address}]` : address;
}
