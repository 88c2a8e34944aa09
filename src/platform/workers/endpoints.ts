// The platform's endpoints, queue and load-balanced: created, listed and removed with their workers, and the
// environment that points a worker at the platform.
import { resolve } from "node:path";
import { playgroundSample } from "../../app/sample.js";
import { ArgumentError } from "../../flash-error.js";
import type { Logger } from "../../log/index.js";
import { ENDPOINT_DEFAULTS, type EndpointConfig, type EndpointState } from "../state/endpoint.js";
import type { EndpointInfo, EndpointInit } from "../state/endpoint-init.js";
import { newShortId } from "../state/ids.js";
import type { Scheduler } from "../state/scheduler.js";
import type { LbEndpointInfo, LbEndpointInit, LbEndpoints } from "./lb-proxy.js";
import { WorkerPool } from "./pool.js";

export interface EndpointsOptions {
  scheduler: Scheduler;
  lb: LbEndpoints;
  log: Logger;
  apiKey: string;
  /** The platform's base URL, known once it listens. */
  baseUrl(): string;
  workerCommand: (file: string) => string[];
  stopGraceMs: number;
  initTimeoutMs: number;
  pingIntervalMs: number;
}

/** Queue endpoints (a scheduler entry and, with a worker command or launch, a pool) and load-balanced ones. */
export class PlatformEndpoints {
  readonly pools = new Map<string, WorkerPool>();
  private readonly log: Logger;

  constructor(private readonly options: EndpointsOptions) {
    this.log = options.log.child({ subject: "platform" });
  }

  create(init: EndpointInit): EndpointInfo {
    if (init.kind === "load-balanced") return this.lbInfo(this.createLb(lbInit(init)));
    const config = endpointConfig(init, this.options.workerCommand);
    const endpoint = this.options.scheduler.addEndpoint(config);
    if (config.command) this.pools.set(config.id, this.poolFor(endpoint));
    this.log.info(
      `Endpoint ${config.id} (${config.name}) ready at ${this.options.baseUrl()}/v2/${config.id}`,
    );
    return this.info(endpoint);
  }

  /** A queue endpoint whose workers run from a launch set later (a REST-made one). */
  addQueue(config: EndpointConfig): void {
    const endpoint = this.options.scheduler.addEndpoint(config);
    this.pools.set(config.id, this.poolFor(endpoint));
  }

  createLb(init: LbEndpointInit): LbEndpointInfo {
    const created = this.options.lb.create(init).info(this.options.baseUrl());
    this.log.info(`Load-balanced endpoint ${created.id} (${created.name}) at ${created.url}/<path>`);
    return created;
  }

  async remove(id: string): Promise<boolean> {
    if (await this.options.lb.remove(id)) return true;
    const pool = this.pools.get(id);
    this.pools.delete(id);
    const removed = this.options.scheduler.removeEndpoint(id);
    await pool?.close();
    return removed;
  }

  list(): EndpointInfo[] {
    const baseUrl = this.options.baseUrl();
    return [
      ...this.options.scheduler.listEndpoints().map((e) => this.info(e)),
      ...this.options.lb.list().map((e) => this.lbInfo(e.info(baseUrl))),
    ];
  }

  /** The environment that points a worker at this platform (docs/protocol.md §2.1). */
  workerEnv(endpointId: string, workerId: string): Record<string, string> {
    const base = `${this.options.baseUrl()}/v2/${endpointId}`;
    return {
      RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=local`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=local`,
      RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/$RUNPOD_POD_ID/$ID?gpu=local`,
      RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=local`,
      RUNPOD_POD_ID: workerId,
      RUNPOD_AI_API_KEY: this.options.apiKey,
      RUNPOD_PING_INTERVAL: String(this.options.pingIntervalMs),
      // Where a worker may store files it returns links to (generated images); the links expire.
      FLASH_FILES_URL: `${base}/files`,
      // Memory, disk and network thresholds are for cloud hosts, not a laptop; the user's and GPU checks still run.
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
    };
  }

  killAll(): void {
    for (const pool of this.pools.values()) pool.killAll();
    for (const endpoint of this.options.lb.list()) endpoint.killAll();
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((pool) => pool.close()).concat(this.options.lb.close()));
  }

  private poolFor(endpoint: EndpointState): WorkerPool {
    return new WorkerPool({
      endpoint,
      scheduler: this.options.scheduler,
      workerEnv: (workerId) => this.workerEnv(endpoint.id, workerId),
      log: this.options.log,
      stopGraceMs: this.options.stopGraceMs,
      initTimeoutMs: endpoint.config.initTimeoutMs ?? this.options.initTimeoutMs,
    });
  }

  private info(endpoint: EndpointState): EndpointInfo {
    const { config } = endpoint;
    return {
      id: config.id,
      kind: "queue",
      name: config.name,
      url: `${this.options.baseUrl()}/v2/${config.id}`,
      workers: config.workers,
      executionTimeoutMs: config.executionTimeoutMs,
      idleTimeoutMs: config.idleTimeoutMs,
      maxRetries: config.maxRetries,
      command: config.command,
      cwd: config.cwd,
      workersRunning: this.pools.get(config.id)?.size ?? 0,
    };
  }

  /** A load-balanced endpoint as the management API lists it: its URL is where its routes are. */
  private lbInfo(lbEndpoint: LbEndpointInfo): EndpointInfo {
    const init = this.options.lb.get(lbEndpoint.id)?.init;
    return {
      id: lbEndpoint.id,
      kind: "load-balanced",
      name: lbEndpoint.name,
      url: lbEndpoint.url,
      workers: lbEndpoint.workers,
      executionTimeoutMs: init?.executionTimeoutMs ?? 600_000,
      idleTimeoutMs: init?.idleTimeoutMs ?? 5_000,
      maxRetries: 0,
      workersRunning: lbEndpoint.workersRunning,
    };
  }
}

function lbInit({ kind: _kind, maxRetries: _retries, ...init }: EndpointInit): LbEndpointInit {
  return { ...init, id: init.id ?? newShortId() };
}

function endpointConfig(init: EndpointInit, workerCommand: (file: string) => string[]): EndpointConfig {
  const id = init.id ?? newShortId();
  const workers = init.workers ?? ENDPOINT_DEFAULTS.workers;
  const [min, max] = workers;
  if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < Math.max(min, 1)) {
    throw new ArgumentError(`Invalid workers [${min}, ${max}]: expected 0 <= min <= max and max >= 1`);
  }
  const file = init.file ? resolve(init.cwd ?? ".", init.file) : undefined;
  const command = init.command ?? (file ? workerCommand(file) : undefined);
  const sample = file ? playgroundSample(file) : undefined;
  return {
    id,
    name: init.name ?? id,
    executionTimeoutMs: init.executionTimeoutMs ?? ENDPOINT_DEFAULTS.executionTimeoutMs,
    maxRetries: init.maxRetries ?? ENDPOINT_DEFAULTS.maxRetries,
    workers: [min, max],
    idleTimeoutMs: init.idleTimeoutMs ?? ENDPOINT_DEFAULTS.idleTimeoutMs,
    command,
    cwd: init.cwd,
    env: init.env ?? {},
    sample,
    openaiCompatible: init.openaiCompatible,
    initTimeoutMs: init.initTimeoutMs,
    openapi: init.openapi,
    checkInput: init.checkInput,
  };
}
