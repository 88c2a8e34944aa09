// Load-balanced endpoints on the local platform: worker processes serving HTTP, health-checked through `/ping`
// (200 ready, 204 initializing, anything else unhealthy: docs/toolkit.md §4.2), and a proxy from
// `/lb/<endpoint_id>/<path>` to a ready worker.
import { type ChildProcess, spawn } from "node:child_process";
import { Agent, request as httpRequest, type IncomingMessage } from "node:http";
import { connect } from "node:net";
import { resolve } from "node:path";
import type { Duplex } from "node:stream";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { timeoutMessage } from "../../app/rules.js";
import { playgroundSample, sampleRoute } from "../../app/sample.js";
import { ArgumentError, isFlashError, NameTakenError } from "../../flash-error.js";
import { forwardHeaders, refuseUpgrade, upgradeHead } from "../../http/proxy.js";
import { PARENT_PIPE_ENV } from "../../lifecycle.js";
import type { Logger } from "../../log/index.js";
import type { PlatformContext } from "../api/context.js";
import { checkKey, clientGone, didYouMean, HttpError } from "../api/http.js";
import type { WorkerLaunch } from "../state/endpoint.js";
import type { EndpointInit } from "../state/endpoint-init.js";
import { newShortId } from "../state/ids.js";
import { type DeadWorker, relayOutput, WorkerExits } from "./pool.js";
import { kill, markContainerRun, terminate } from "./terminate.js";

/** A load-balanced endpoint takes the same settings as a queue one, less the retry limit (requests are not retried). */
export type LbEndpointInit = Omit<EndpointInit, "id" | "kind" | "maxRetries"> & {
  id: string;
  /** Workers run as `launch(env)` (a container); set later with setLaunch() when it is still being prepared. */
  launch?: WorkerLaunch;
  /** No worker is started until setLaunch() (the image is still being pulled). */
  awaitLaunch?: boolean;
  /** Requests one worker takes at once (default unlimited): past it soft affinity falls back and strict waits. */
  workerConcurrency?: number;
};

/** A load-balanced worker as GET /v2/serverless/<id>/workers lists it. */
export interface LbWorkerView {
  id: string;
  state: "starting" | "initializing" | "ready" | "unhealthy";
  startedAt: number;
  inFlight: number;
}

export interface LbEndpointInfo {
  id: string;
  name: string;
  /** Base URL of the routes: `<platform>/lb/<id>`. */
  url: string;
  workers: [number, number];
  /** Worker processes and how many answer /ping 200. */
  workersRunning: number;
  workersReady: number;
  /** The first request of test_input.json beside its handler, for the console's playground. */
  sample?: string;
}

/** One request the proxy answered, as the console shows it. */
export interface LbRequest {
  /** Arrival, ms since epoch. */
  at: number;
  method: string;
  /** The route's path on the worker, without its query. */
  path: string;
  /** The status the client got; 499 when the client left before any answer (nginx's convention). */
  status: number;
  /** Arrival to the last byte of the answer. */
  ms: number;
}

/** Requests each endpoint remembers for the console; older ones live on only in the metrics' buckets. */
export const LB_REQUESTS_KEPT = 200;
/** A path longer than this is cut in the record (it is for reading, not replaying). */
const PATH_CHARS = 200;

export interface LbOptions {
  log: Logger;
  workerCommand(file: string): string[];
  /** A worker asked to stop is killed after this long. */
  stopGraceMs: number;
  /** How long a request waits for a ready worker before a 503 (cold start, /ping gating). */
  readyWaitMs?: number;
  /** How long a strict-affinity request waits for its busy worker before the 400 (RunPod: ~5 min). */
  affinityWaitMs?: number;
  /** A request's whole time on its worker before the 504 (RunPod's "Processing timeout": 5.5 min). */
  processingTimeoutMs?: number;
  /** Request and answer bodies past this are refused (RunPod's "Payload limit": 30 MB). */
  payloadLimitBytes?: number;
  /** Called for every request a load-balanced endpoint answered (the console's metrics). */
  onRequest?(endpointId: string, request: LbRequest): void;
}

type WorkerState = "starting" | "initializing" | "ready" | "unhealthy";

interface LbWorker {
  id: string;
  child: ChildProcess;
  port?: number;
  /** PORT_HEALTH's port, where the endpoint's env asks for one apart from PORT. */
  healthPort?: number;
  state: WorkerState;
  inFlight: number;
  startedAt: number;
  idleSince: number;
  stopping: boolean;
  timer?: NodeJS.Timeout;
  exited: Promise<void>;
}

/** Polls a starting worker's /ping often, a ready one now and then (the platform polls it periodically). */
const PING_STARTING_MS = 100;
const PING_READY_MS = 1_000;
const PING_TIMEOUT_MS = 2_000;
/** serverless/load-balancing/overview, "Timeouts and limits": request timeout "2 min (no worker available)". */
const DEFAULT_READY_WAIT_MS = 120_000;
/** The same table: "Processing timeout | 5.5 min (per request)". */
const DEFAULT_PROCESSING_TIMEOUT_MS = 330_000;
/** The same table: "Payload limit | 30 MB (request and response)". */
const DEFAULT_PAYLOAD_LIMIT_BYTES = 30 * 1024 * 1024;
const mb = (bytes: number) =>
  bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`;
/** "If the worker is at capacity, the request waits up to ~5 minutes" (serverless/load-balancing/worker-affinity). */
const DEFAULT_AFFINITY_WAIT_MS = 300_000;
/** The header naming the worker that answered, and a request's affinity (serverless/load-balancing/worker-affinity). */
export const WORKER_ID_HEADER = "x-runpod-worker-id";

/** A request's `X-Runpod-Worker-Id`: `<id>` soft, `strict <id>`, `strict-resume <id>`. */
export interface Affinity {
  mode: "soft" | "strict" | "strict-resume";
  worker: string;
}

/** Parses `X-Runpod-Worker-Id`; undefined when absent or empty (normal routing). Throws a 400 on a malformed value. */
export function parseAffinity(value: string | string[] | undefined): Affinity | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim() ?? "";
  if (text === "") return undefined;
  const parts = text.split(/\s+/);
  if (parts.length === 1) return { mode: "soft", worker: text };
  const [mode, worker] = parts;
  if (parts.length === 2 && (mode === "strict" || mode === "strict-resume") && worker)
    return { mode, worker };
  throw new HttpError(
    400,
    `Invalid X-Runpod-Worker-Id "${text}": expected "<worker-id>", "strict <worker-id>" or "strict-resume <worker-id>"`,
  );
}
/** How much longer than the execution timeout the proxy waits, so the worker's own 504 answers first. */
const TIMEOUT_SLACK_MS = 1_000;
/** The status recorded for a request whose client left before the answer began. */
const CLIENT_GONE = 499;
/** The worker's own log line that names its port (src/runtime/lb/serve.ts). */
const LISTENING = /listening on http:\/\/[^:\s]+:(\d+)/;
/** Its line that names the health port (src/runtime/lb/health.ts healthLine). */
const HEALTH_LISTENING = /Health checks on http:\/\/[^:\s]+:(\d+)\//;
/** The worker processes of one load-balanced endpoint. */
export class LbEndpoint {
  readonly name: string;
  readonly workers: [number, number];
  readonly executionTimeoutMs: number;
  private readonly idleTimeoutMs: number;
  private command: string[] | undefined;
  private launch: WorkerLaunch | undefined;
  private readonly processes = new Map<string, LbWorker>();
  private readonly waiters = new Set<() => void>();
  private readonly agent = new Agent({ keepAlive: true });
  private readonly ticker: NodeJS.Timeout;
  private readonly exits: WorkerExits;
  private readonly served: LbRequest[] = [];
  private closed = false;
  private next = 0;
  private readonly sample: string | undefined;

  constructor(
    readonly init: LbEndpointInit,
    private readonly options: LbOptions,
  ) {
    this.exits = new WorkerExits(options.log);
    this.name = init.name ?? init.id;
    const [min, max] = init.workers ?? [0, 1];
    // max 0 is an endpoint with its workers scaled to none (REST v2 allows it); only a launched one has that.
    const least = init.launch || init.awaitLaunch ? min : Math.max(min, 1);
    if (!Number.isInteger(min) || !Number.isInteger(max) || min < 0 || max < least) {
      throw new ArgumentError(`Invalid workers [${min}, ${max}]: expected 0 <= min <= max and max >= 1`);
    }
    this.workers = [min, max];
    this.executionTimeoutMs = init.executionTimeoutMs ?? 600_000;
    this.idleTimeoutMs = init.idleTimeoutMs ?? 5_000;
    this.launch = init.launch;
    const file = init.file ? resolve(init.cwd ?? ".", init.file) : undefined;
    this.command = init.command ?? (file ? options.workerCommand(file) : undefined);
    const route = sampleRoute(init.routes ?? []);
    this.sample = (file ? playgroundSample(file) : undefined) ?? (route ? JSON.stringify(route) : undefined);
    if (!this.launch && !init.awaitLaunch && (!this.command || this.command.length === 0))
      throw new ArgumentError(`Load-balanced endpoint ${init.id} needs a file or command`);
    this.ticker = setInterval(() => this.scale(false), 250);
    this.ticker.unref();
    this.scale(false);
  }

  get id(): string {
    return this.init.id;
  }

  get running(): number {
    return this.alive().length;
  }

  get ready(): number {
    return this.alive().filter((w) => w.state === "ready").length;
  }

  /**
   * A ready worker (the pinned one, else the least busy), waiting for one while workers start; undefined when
   * the wait ends first, "gone" when a strict affinity's worker is not (or no longer) running.
   */
  async acquire(
    waitMs: number,
    signal: AbortSignal,
    affinity?: Affinity,
  ): Promise<LbWorker | "gone" | undefined> {
    const strict = affinity !== undefined && affinity.mode !== "soft";
    const deadline = Date.now() + waitMs;
    for (;;) {
      const pinned = affinity ? this.processes.get(affinity.worker) : undefined;
      if (strict && (!pinned || pinned.stopping)) return "gone";
      const worker = pinned && this.available(pinned) ? pinned : strict ? undefined : this.pick();
      if (worker) {
        worker.inFlight++;
        // Every ready worker busy: bring up another for the next request, within max.
        if (worker.inFlight > 1) this.scale(true);
        return worker;
      }
      if (!strict) this.scale(true);
      const left = deadline - Date.now();
      if (left <= 0 || signal.aborted || this.closed) return undefined;
      await new Promise<void>((wake) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          this.waiters.delete(done);
          wake();
        };
        const timer = setTimeout(done, Math.min(left, 1_000));
        signal.addEventListener("abort", done, { once: true });
        this.waiters.add(done);
      });
    }
  }

  release(worker: LbWorker): void {
    worker.inFlight = Math.max(0, worker.inFlight - 1);
    if (worker.inFlight === 0) worker.idleSince = Date.now();
    // A request waiting for this worker (strict affinity, or every worker at capacity) may go now.
    this.wake();
  }

  /** The newest requests this endpoint answered, oldest first (at most LB_REQUESTS_KEPT). */
  recentRequests(): LbRequest[] {
    return [...this.served];
  }

  /** Notes one answered request in the ring and tells the listeners (the console). */
  record(method: string, url: string, status: number, startedAt: number): void {
    const path = url.split("?")[0] ?? url;
    const request: LbRequest = {
      at: startedAt,
      method,
      path: path.length > PATH_CHARS ? `${path.slice(0, PATH_CHARS)}…` : path,
      status,
      ms: Date.now() - startedAt,
    };
    this.served.push(request);
    if (this.served.length > LB_REQUESTS_KEPT) this.served.shift();
    this.options.onRequest?.(this.id, request);
  }

  /** Proxies one request to `worker`; the answer is streamed back as the worker writes it. Resolves to its status. */
  forward(request: FastifyRequest, reply: FastifyReply, worker: LbWorker, path: string): Promise<number> {
    return new Promise((done) => {
      const res = reply.raw;
      let finished = false;
      let processing: NodeJS.Timeout | undefined;
      const finish = () => {
        if (finished) return;
        finished = true;
        clearTimeout(processing);
        this.release(worker);
        done(res.headersSent ? res.statusCode : CLIENT_GONE);
      };
      const fail = (status: number, message: string) => {
        if (!res.headersSent) {
          res.writeHead(status, {
            "content-type": "application/json; charset=utf-8",
            [WORKER_ID_HEADER]: worker.id,
          });
          res.end(JSON.stringify({ error: message }));
        } else {
          res.destroy();
        }
        finish();
      };
      const limit = this.options.payloadLimitBytes ?? DEFAULT_PAYLOAD_LIMIT_BYTES;
      const tooLarge = (what: string, bytes: number) =>
        `${what} is over the load balancer's ${mb(limit)} payload limit (${mb(bytes)} so far): use a network volume or send it in chunks`;
      // Set once the proxy has answered itself (limit, timeout): the upstream error that follows is not news.
      let refused = false;
      const refuse = (status: number, message: string) => {
        if (refused) return;
        refused = true;
        upstream.destroy();
        fail(status, message);
      };
      const upstream = httpRequest(
        {
          host: "127.0.0.1",
          port: worker.port,
          method: request.method,
          path,
          headers: forwardHeaders(request.headers),
          agent: this.agent,
        },
        (answer) => {
          const declared = Number(answer.headers["content-length"] ?? 0);
          if (declared > limit) return refuse(502, tooLarge(`Worker ${worker.id}'s answer`, declared));
          let received = 0;
          // An answer without a length that grows past the limit is cut: its status is already sent.
          answer.on("data", (chunk: Buffer) => {
            received += chunk.length;
            if (received > limit) refuse(502, tooLarge(`Worker ${worker.id}'s answer`, received));
          });
          res.writeHead(answer.statusCode ?? 502, {
            ...forwardHeaders(answer.headers),
            [WORKER_ID_HEADER]: worker.id,
          });
          answer.pipe(res);
          answer.once("end", finish);
          answer.once("error", () => fail(502, `Worker ${worker.id} broke off its answer`));
        },
      );
      // The worker times its route out itself and answers 504 with the same message; this is for one that hangs.
      let timedOut = false;
      upstream.setTimeout(this.executionTimeoutMs + TIMEOUT_SLACK_MS, () => {
        timedOut = true;
        upstream.destroy();
      });
      upstream.once("error", (err) => {
        if (refused) return;
        if (timedOut) fail(504, timeoutMessage(this.id, this.executionTimeoutMs));
        else fail(502, `Worker ${worker.id}: ${err.message}`);
      });
      // The load balancer's own bound on a request's whole time, streamed answers included.
      const processingMs = this.options.processingTimeoutMs ?? DEFAULT_PROCESSING_TIMEOUT_MS;
      processing = setTimeout(
        () =>
          refuse(
            504,
            `Processing timeout on ${this.id} after ${(processingMs / 1000).toFixed(1)}s: the load balancer's limit per request`,
          ),
        processingMs,
      );
      res.once("close", () => {
        clearTimeout(processing);
        if (!res.writableFinished) upstream.destroy();
        finish();
      });
      let sent = 0;
      request.raw.on("data", (chunk: Buffer) => {
        sent += chunk.length;
        if (sent > limit) refuse(413, tooLarge("The request body", sent));
      });
      request.raw.pipe(upstream);
    });
  }

  /** Workers run as `launch(env)` from now on; running ones are replaced. */
  setLaunch(launch: WorkerLaunch): void {
    this.launch = launch;
    this.restartAll();
  }

  /** Every worker not being stopped. */
  workerList(): LbWorkerView[] {
    return this.alive().map((w) => ({
      id: w.id,
      state: w.state,
      startedAt: w.startedAt,
      inFlight: w.inFlight,
    }));
  }

  /** Workers that exited on their own and are not yet followed by a ready one (listed as unhealthy). */
  get dead(): readonly DeadWorker[] {
    return this.exits.dead;
  }

  /** Replaces every worker (the handler file changed): old ones finish their requests, new ones take the next. */
  restartAll(): void {
    this.exits.reset();
    for (const worker of this.alive()) this.stop(worker);
    this.scale(false);
  }

  /** Kills every worker process now, requests in flight or not (a second Ctrl-C). */
  killAll(): void {
    for (const worker of this.processes.values()) kill(worker.child);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.ticker);
    for (const wake of [...this.waiters]) wake();
    for (const worker of this.processes.values()) this.stop(worker);
    await Promise.all([...this.processes.values()].map((w) => w.exited));
    this.agent.destroy();
  }

  info(baseUrl: string): LbEndpointInfo {
    return {
      id: this.id,
      name: this.name,
      url: `${baseUrl}/lb/${this.id}`,
      workers: this.workers,
      workersRunning: this.running,
      workersReady: this.ready,
      sample: this.sample,
    };
  }

  private alive(): LbWorker[] {
    return [...this.processes.values()].filter((w) => !w.stopping);
  }

  private get capacity(): number {
    return this.init.workerConcurrency ?? Number.POSITIVE_INFINITY;
  }

  /** Ready and below its concurrency: it can take a request now. */
  private available(worker: LbWorker): boolean {
    return !worker.stopping && worker.state === "ready" && worker.inFlight < this.capacity;
  }

  private wake(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private pick(): LbWorker | undefined {
    const ready = this.alive().filter((w) => this.available(w));
    if (ready.length === 0) return undefined;
    // Least busy first; round-robin among equals so load spreads.
    this.next = (this.next + 1) % ready.length;
    const rotated = [...ready.slice(this.next), ...ready.slice(0, this.next)];
    return rotated.reduce((best, w) => (w.inFlight < best.inFlight ? w : best));
  }

  /** Keeps min workers, adds one when asked and none is on its way, stops idle ones above min. */
  private scale(wanted: boolean): void {
    if (this.closed || (!this.launch && !this.command)) return;
    const [min, max] = this.workers;
    const alive = this.alive();
    const coming = alive.some((w) => w.state === "starting" || w.state === "initializing");
    const busy = alive.every((w) => w.state !== "ready" || w.inFlight > 0);
    const target = Math.max(min, wanted && busy && !coming ? alive.length + 1 : alive.length);
    if (target > alive.length && Date.now() >= this.exits.respawnAt) {
      for (let i = alive.length; i < Math.min(target, max); i++) this.spawn();
      return;
    }
    let count = alive.length;
    const now = Date.now();
    for (const worker of alive.reverse()) {
      if (count <= min) break;
      if (worker.inFlight > 0 || worker.state !== "ready") continue;
      if (now - Math.max(worker.idleSince, worker.startedAt) >= this.idleTimeoutMs) {
        this.options.log.info(`Worker:${worker.id} | idle for ${now - worker.idleSince} ms; stopping it`);
        this.stop(worker);
        count--;
      }
    }
  }

  private spawn(): void {
    const id = newShortId();
    // PORT=0: the worker picks a free port and names it in its "listening on" line (PORT_HEALTH too, when set).
    const env = {
      ...this.init.env,
      PORT: "0",
      // An unset PORT_HEALTH means "the health check is on PORT" to the worker.
      ...(this.separateHealthPort ? { PORT_HEALTH: "0" } : {}),
      FLASH_LB_HOST: "127.0.0.1",
      RUNPOD_POD_ID: id,
    };
    const launched = this.launch?.(env);
    const [command, ...args] = (launched ? launched.argv : this.command) ?? [];
    if (!command) return;
    const log = this.options.log.child({ subject: id });
    const child = spawn(command, args, {
      cwd: this.init.cwd,
      env: launched
        ? { ...process.env, ...launched.env }
        : { ...process.env, ...env, [PARENT_PIPE_ENV]: "1" },
      // Its own process group: a terminal's Ctrl-C reaches the platform only, which sends the one SIGTERM.
      detached: true,
      // A local worker's stdin is a pipe from the platform: it ends when the platform dies, and the worker stops.
      stdio: [this.launch ? "ignore" : "pipe", "pipe", "pipe"],
    });
    // A container's processes get the worker's stop signals too (they do not share its process group).
    if (this.launch) markContainerRun(child);
    let exited: () => void = () => {};
    const now = Date.now();
    const worker: LbWorker = {
      id,
      child,
      state: "starting",
      inFlight: 0,
      startedAt: now,
      idleSince: now,
      stopping: false,
      exited: new Promise((r) => {
        exited = r;
      }),
    };
    this.processes.set(id, worker);
    log.info(`Worker:${id} | starting (pid ${child.pid}): ${[command, ...args].join(" ")}`);
    relayOutput(child, log, (line) => {
      const port = worker.port === undefined ? LISTENING.exec(line)?.[1] : undefined;
      if (port) worker.port = Number(port);
      const health =
        this.separateHealthPort && worker.healthPort === undefined
          ? HEALTH_LISTENING.exec(line)?.[1]
          : undefined;
      if (health) worker.healthPort = Number(health);
      // Health checks begin once the port they go to is known.
      if (
        (port || health) &&
        worker.port !== undefined &&
        (!this.separateHealthPort || worker.healthPort !== undefined)
      )
        this.ping(worker);
    });
    child.once("error", (err) => log.error(`Worker:${id} | could not start: ${err.message}`));
    child.once("close", (code, signal) => {
      clearTimeout(worker.timer);
      this.processes.delete(id);
      exited();
      this.exited(worker, code, signal);
    });
  }

  /** The endpoint's env sets PORT_HEALTH: its workers answer health checks on a port of their own. */
  private get separateHealthPort(): boolean {
    return this.init.env?.PORT_HEALTH !== undefined;
  }

  /** HEALTH_CHECK_PATH from the endpoint's env, else /ping (serverless/load-balancing/overview). */
  private get healthPath(): string {
    return this.init.env?.HEALTH_CHECK_PATH || "/ping";
  }

  /** One health check, then the next one scheduled: 200 ready, 204 initializing, anything else unhealthy. */
  private ping(worker: LbWorker): void {
    if (worker.stopping || this.closed || worker.port === undefined) return;
    const log = this.options.log.child({ subject: worker.id });
    const port = worker.healthPort ?? worker.port;
    fetch(`http://127.0.0.1:${port}${this.healthPath}`, { signal: AbortSignal.timeout(PING_TIMEOUT_MS) })
      .then(async (res) => {
        await res.arrayBuffer();
        return res.status === 200 ? "ready" : res.status === 204 ? "initializing" : "unhealthy";
      })
      .catch((): WorkerState => "unhealthy")
      .then((state) => {
        if (worker.stopping) return;
        if (state !== worker.state) {
          if (state === "ready") {
            log.info(`Worker:${worker.id} | ready on port ${worker.port} (${this.healthCheck(worker)} 200)`);
            this.exits.recovered(worker.startedAt);
          } else if (state === "initializing")
            log.info(`Worker:${worker.id} | initializing (${this.healthCheck(worker)} 204)`);
          else if (worker.state === "ready")
            log.warn(`Worker:${worker.id} | unhealthy: ${this.healthCheck(worker)} failed`);
          worker.state = state;
          if (state === "ready") for (const wake of [...this.waiters]) wake();
        }
        worker.timer = setTimeout(
          () => this.ping(worker),
          state === "ready" ? PING_READY_MS : PING_STARTING_MS,
        );
        worker.timer.unref();
      });
  }

  /** `/ping`, or the path and port the endpoint's env names, for log lines. */
  private healthCheck(worker: LbWorker): string {
    return worker.healthPort === undefined
      ? this.healthPath
      : `${this.healthPath} on port ${worker.healthPort}`;
  }

  private stop(worker: LbWorker): void {
    if (worker.stopping) return;
    worker.stopping = true;
    clearTimeout(worker.timer);
    terminate(worker.child, worker.exited, this.options.stopGraceMs);
  }

  private exited(worker: LbWorker, code: number | null, signal: NodeJS.Signals | null): void {
    const how = this.exits.logged(worker, code, signal);
    // A strict-affinity request waiting for this worker learns it is gone.
    this.wake();
    if (worker.stopping || this.closed) return;
    this.exits.crashed(worker, code, how);
    this.scale(false);
  }
}

/** The load-balanced endpoints of a platform, by id. */
export class LbEndpoints {
  private readonly endpoints = new Map<string, LbEndpoint>();
  private readonly listeners = new Set<(endpointId: string, request: LbRequest) => void>();

  constructor(private readonly options: LbOptions) {}

  /** Called for every request any of them answered; returns the unsubscribe function. */
  onRequest(listener: (endpointId: string, request: LbRequest) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  create(init: LbEndpointInit): LbEndpoint {
    if (this.endpoints.has(init.id))
      throw new NameTakenError(`Load-balanced endpoint ${init.id} already exists`);
    const endpoint = new LbEndpoint(init, {
      ...this.options,
      onRequest: (endpointId, request) => {
        this.options.onRequest?.(endpointId, request);
        for (const listener of this.listeners) listener(endpointId, request);
      },
    });
    this.endpoints.set(init.id, endpoint);
    return endpoint;
  }

  get(id: string): LbEndpoint | undefined {
    return this.endpoints.get(id);
  }

  list(): LbEndpoint[] {
    return [...this.endpoints.values()];
  }

  async remove(id: string): Promise<boolean> {
    const endpoint = this.endpoints.get(id);
    if (!endpoint) return false;
    this.endpoints.delete(id);
    await endpoint.close();
    return true;
  }

  async close(): Promise<void> {
    await Promise.all(this.list().map((e) => e.close()));
    this.endpoints.clear();
  }

  get readyWaitMs(): number {
    return this.options.readyWaitMs ?? DEFAULT_READY_WAIT_MS;
  }

  get payloadLimitBytes(): number {
    return this.options.payloadLimitBytes ?? DEFAULT_PAYLOAD_LIMIT_BYTES;
  }

  get affinityWaitMs(): number {
    return this.options.affinityWaitMs ?? DEFAULT_AFFINITY_WAIT_MS;
  }
}

/** A host naming a load-balanced endpoint: `<endpoint_id>.localhost[:port]`. */
const LB_HOST = /^([a-z0-9_-]+)\.localhost(?::\d+)?$/i;

/**
 * The platform's form of RunPod's `https://<endpoint_id>.api.runpod.ai/<path>`: a request to
 * `http://<endpoint_id>.localhost:<port>/<path>` (curl and browsers resolve *.localhost to loopback) is
 * routed as `/lb/<endpoint_id>/<path>`. Used as the server's rewriteUrl, before routing.
 */
export function lbHostRewrite(req: IncomingMessage): string {
  const url = req.url ?? "/";
  const m = LB_HOST.exec(req.headers.host ?? "");
  return m ? `/lb/${m[1]}${url.startsWith("/") ? url : `/${url}`}` : url;
}

/** Why `/lb/<id>` leads nowhere: a queue endpoint (and how to call it), or no endpoint (and the nearest one). */
function notLoadBalanced(id: string, ctx: PlatformContext, endpoints: LbEndpoints): string {
  if (ctx.scheduler.endpoint(id)) {
    return `Endpoint ${id} is a queue endpoint, not load-balanced: send it jobs with POST /v2/${id}/runsync (or /run) and a body {"input": {...}}`;
  }
  return `Load-balanced endpoint ${id} not found${didYouMean(
    id,
    endpoints.list().map((e) => e.id),
  )}`;
}

/** `/lb/<endpoint_id>/<path>`: the client's request, Bearer key checked, sent on to a ready worker. */
export async function lbProxy(
  app: FastifyInstance,
  options: {
    ctx: PlatformContext;
    endpoints: LbEndpoints;
    /** Takes an upgrade that is not the load balancer's (a Pod's proxy host); false leaves it here. */
    claimUpgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  },
): Promise<void> {
  const { ctx, endpoints } = options;
  // Bodies are streamed to the worker unread.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, _payload, done) => done(null));
  app.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, false));

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const { endpointId } = request.params as { endpointId: string };
    const endpoint = endpoints.get(endpointId);
    if (!endpoint) throw new HttpError(404, notLoadBalanced(endpointId, ctx, endpoints));
    const prefix = `/lb/${endpointId}`;
    const rest = request.url.slice(request.url.indexOf(prefix) + prefix.length);
    const path = rest.startsWith("/") ? rest : `/${rest}`;
    const startedAt = Date.now();
    const declared = Number(request.headers["content-length"] ?? 0);
    if (declared > endpoints.payloadLimitBytes) {
      endpoint.record(request.method, path, 413, startedAt);
      throw new HttpError(
        413,
        `The request body is ${mb(declared)}, over the load balancer's ${mb(endpoints.payloadLimitBytes)} payload limit: use a network volume or send it in chunks`,
      );
    }
    const affinity = parseAffinity(request.headers[WORKER_ID_HEADER]);
    const strict = affinity !== undefined && affinity.mode !== "soft";
    const waitMs = strict ? endpoints.affinityWaitMs : endpoints.readyWaitMs;
    const worker = await endpoint.acquire(waitMs, clientGone(reply), affinity);
    const left = reply.raw.destroyed || request.raw.destroyed;
    if (worker === "gone" || (strict && !worker && !left)) {
      const gone = worker === "gone";
      const status = gone ? 404 : 400;
      endpoint.record(request.method, path, status, startedAt);
      // The reasons of worker-affinity's error reference; the docs give no body shape.
      return reply
        .code(status)
        .send(
          gone
            ? { error: "affinity_worker_gone", worker: affinity!.worker }
            : { error: "timed out waiting for worker", reason: "worker_timeout", worker: affinity!.worker },
        );
    }
    if (!worker) {
      endpoint.record(request.method, path, left ? CLIENT_GONE : 503, startedAt);
      // RunPod's body for it (serverless/load-balancing/build-a-worker, "Troubleshooting"), and what is going on.
      return reply.code(503).send({
        error: "no workers available",
        message: `No worker of endpoint ${endpointId} is ready (${endpoint.running} starting); try again shortly`,
      });
    }
    reply.hijack();
    endpoint.record(request.method, path, await endpoint.forward(request, reply, worker, path), startedAt);
  };
  app.all("/lb/:endpointId", handle);
  app.all("/lb/:endpointId/*", handle);
  // WebSockets: an upgrade never reaches fastify's routes; the http server hands it over here.
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (options.claimUpgrade?.(req, socket, head)) return;
    upgradeToWorker(req, socket, head, ctx, endpoints).catch((err: Error) => {
      refuseUpgrade(socket, isFlashError(err, "HTTP_STATUS") ? (err as HttpError).status : 502, err.message);
    });
  };
  app.server.on("upgrade", onUpgrade);
  app.addHook("onClose", async () => {
    app.server.off("upgrade", onUpgrade);
  });
}

/**
 * A WebSocket to `/lb/<id>/<path>` (or `<id>.localhost`): key checked as for requests, a worker acquired
 * (affinity too), then the bytes tunnelled both ways; the worker's 101 carries X-Runpod-Worker-Id.
 */
async function upgradeToWorker(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  ctx: PlatformContext,
  endpoints: LbEndpoints,
): Promise<void> {
  const url = lbHostRewrite(req);
  const m = /^\/lb\/([^/?]+)(.*)$/.exec(url);
  if (!m)
    throw new HttpError(
      404,
      `No WebSocket at ${url}: load-balanced endpoints take them at /lb/<endpoint_id>/<path>`,
    );
  checkKey(req, ctx.apiKey, false);
  const endpointId = decodeURIComponent(m[1]!);
  const endpoint = endpoints.get(endpointId);
  if (!endpoint) throw new HttpError(404, notLoadBalanced(endpointId, ctx, endpoints));
  const path = m[2]!.startsWith("/") ? m[2]! : `/${m[2]}`;
  const affinity = parseAffinity(req.headers[WORKER_ID_HEADER]);
  const strict = affinity !== undefined && affinity.mode !== "soft";
  const gone = new AbortController();
  socket.once("close", () => gone.abort());
  const worker = await endpoint.acquire(
    strict ? endpoints.affinityWaitMs : endpoints.readyWaitMs,
    gone.signal,
    affinity,
  );
  if (worker === "gone") throw new HttpError(404, "affinity_worker_gone");
  if (!worker)
    throw new HttpError(strict ? 400 : 503, strict ? "timed out waiting for worker" : "no workers available");
  const startedAt = Date.now();
  const upstream = connect(worker.port ?? 0, "127.0.0.1");
  let status = CLIENT_GONE;
  const done = () => {
    if (status === -1) return;
    endpoint.release(worker);
    endpoint.record(req.method ?? "GET", path, status, startedAt);
    status = -1;
    socket.destroy();
    upstream.destroy();
  };
  upstream.once("error", () => {
    if (status === CLIENT_GONE) refuseUpgrade(socket, 502, `Worker ${worker.id} refused the WebSocket`);
    done();
  });
  upstream.once("close", done);
  socket.once("close", done);
  socket.once("error", done);
  upstream.write(upgradeHead(req, path, worker.port ?? 0));
  if (head.length > 0) upstream.write(head);
  // The worker's answer head gets X-Runpod-Worker-Id, then the bytes flow unread both ways.
  let pending = Buffer.alloc(0);
  const onHead = (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    const end = pending.indexOf("\r\n\r\n");
    if (end < 0) return;
    upstream.off("data", onHead);
    status = Number(/^HTTP\/1\.1 (\d{3})/.exec(pending.subarray(0, end).toString("latin1"))?.[1] ?? 502);
    socket.write(
      Buffer.concat([
        pending.subarray(0, end),
        Buffer.from(`\r\nX-Runpod-Worker-Id: ${worker.id}`),
        pending.subarray(end),
      ]),
    );
    upstream.pipe(socket);
    socket.pipe(upstream);
  };
  upstream.on("data", onHead);
}
