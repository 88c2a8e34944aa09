// The worker processes the platform runs for an endpoint: started, scaled, relayed to its log, restarted.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { backoffMs, type RandomSource } from "../../http/retry.js";
import { PARENT_PIPE_ENV } from "../../lifecycle.js";
import type { Logger } from "../../log/index.js";
import type { EndpointState } from "../state/endpoint.js";
import { newShortId } from "../state/ids.js";
import type { Scheduler } from "../state/scheduler.js";
import { kill, markContainerRun, terminate } from "./terminate.js";

export interface PoolOptions {
  endpoint: EndpointState;
  scheduler: Scheduler;
  /** The RUNPOD_* variables that point a worker with this id at the platform. */
  workerEnv(workerId: string): Record<string, string>;
  log: Logger;
  /** A worker asked to stop is killed after this long (it finishes its jobs first). */
  stopGraceMs: number;
  /** How often the pool looks at the queue and at idle workers. */
  tickMs?: number;
  /** RUNPOD_INIT_TIMEOUT: a worker not heard from this long after its start is unhealthy and killed. */
  initTimeoutMs?: number;
}

interface WorkerProcess {
  id: string;
  child: ChildProcess;
  startedAt: number;
  /** It has called the platform at least once (a ping while its model server loads counts). */
  contacted: boolean;
  /** It has asked for a job: started, its model server (if any) healthy. */
  ready: boolean;
  /** Killed for not calling in within RUNPOD_INIT_TIMEOUT. */
  timedOut: boolean;
  stopping: boolean;
  exited: Promise<void>;
}

type Level = "trace" | "debug" | "info" | "warn" | "error";

const LEVELS: Record<string, Level> = {
  TRACE: "trace",
  DEBUG: "debug",
  INFO: "info",
  WARN: "warn",
  WARNING: "warn",
  ERROR: "error",
  FATAL: "error",
};

/** A line that carries on the record above it: a stack frame, an indented JSON field, a closing bracket. */
const CONTINUATION = /^(\s|[}\]]\s*$)/;

/**
 * Writes one line of a worker's output into the platform log under the worker's id, keeping its level:
 * a `<time> | <LEVEL> | <rest>` text line or a `{"level", "message"}` JSON line loses only its own stamp.
 * A continuation of the record before it (`previous`, its level) keeps that level, so a stack stays ERROR.
 * Returns the level the next line continues at, if it is a continuation.
 */
export function relayLine(line: string, fallback: Level, log: Logger, previous?: Level): Level | undefined {
  const text = /^\S+ \| ([A-Z]+) \| (.*)$/s.exec(line);
  const textLevel = text ? LEVELS[text[1]!] : undefined;
  if (text && textLevel) {
    log[textLevel](text[2]!);
    return textLevel;
  }
  if (line.startsWith("{")) {
    try {
      const record = JSON.parse(line) as { level?: unknown; message?: unknown; requestId?: unknown };
      const level = typeof record.level === "string" ? LEVELS[record.level.toUpperCase()] : undefined;
      if (level && typeof record.message === "string") {
        const job = typeof record.requestId === "string" ? `${record.requestId} | ` : "";
        log[level](`${job}${record.message}`);
        return level;
      }
    } catch {
      // Not a log record: relayed as it is below.
    }
  }
  if (previous && CONTINUATION.test(line)) {
    log[previous](line);
    return previous;
  }
  log[fallback](line);
  return undefined;
}

/** Relays a worker's stdout (INFO) and stderr (WARN) line by line; `watch` sees each line first. */
export function relayOutput(child: ChildProcess, log: Logger, watch?: (line: string) => void): void {
  for (const [stream, level] of [
    [child.stdout, "info"],
    [child.stderr, "warn"],
  ] as const) {
    if (!stream) continue;
    let previous: Level | undefined;
    createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
      watch?.(line);
      previous = relayLine(line, level, log, previous);
    });
  }
}

/** Crash-loop back-off: 0.5 s doubling to 30 s, jittered (backoffMs); a worker that lived this long resets it. */
const CRASH_BACKOFF = { baseMs: 500, maxMs: 30_000, healthyAfterMs: 10_000 };
/** A worker blocked in a stopped job gets this long between SIGTERM and SIGKILL: its drain cannot run. */
const STUCK_STOP_GRACE_MS = 1_000;

/** A spawned worker process as the exit bookkeeping sees it. */
interface ExitingWorker {
  id: string;
  startedAt: number;
  stopping: boolean;
}

/** A worker that exited without being asked to: listed as unhealthy until a later one proves healthy. */
export interface DeadWorker {
  id: string;
  startedAt: number;
  exitedAt: number;
  /** "exited with code 1; crashed 3 time(s) in a row" */
  reason: string;
}

/** Dead workers each pool keeps listed (the newest): enough to read why, not a history. */
const DEAD_KEPT = 3;

/**
 * How a pool's worker processes end (queue and load-balanced alike): each exit logged, and workers that crash
 * soon after they start delay the next start, doubling each time in a row (jittered, so endpoints do not restart in step).
 */
export class WorkerExits {
  private crashes = 0;
  private readonly deadList: DeadWorker[] = [];
  /** No worker is started before this time. */
  respawnAt = 0;

  constructor(
    private readonly log: Logger,
    /** The restart backoff's jitter (Math.random by default). */
    private readonly random: RandomSource = Math.random,
  ) {}

  /** Logs the exit; returns "code N" or "signal S" for the caller's own messages. */
  logged(worker: ExitingWorker, code: number | null, signal: NodeJS.Signals | null): string {
    const how = signal ? `signal ${signal}` : `code ${code}`;
    const log = this.log.child({ subject: worker.id });
    if (worker.stopping) log.info(`Worker:${worker.id} | stopped (${how})`);
    else log.warn(`Worker:${worker.id} | exited with ${how}`);
    return how;
  }

  /** Counts an exit the pool did not ask for: a crash soon after start pushes the next start back. */
  crashed(worker: ExitingWorker, code: number | null, how: string): void {
    let reason = `exited with ${how}`;
    if (code !== 0 && Date.now() - worker.startedAt < CRASH_BACKOFF.healthyAfterMs) {
      this.crashes++;
      const delay = backoffMs(CRASH_BACKOFF, this.crashes, this.random);
      this.respawnAt = Date.now() + delay;
      reason += `; crashed ${this.crashes} time(s) in a row`;
      this.log
        .child({ subject: worker.id })
        .warn(`Worker:${worker.id} | crashed ${this.crashes} time(s) in a row; next start in ${delay} ms`);
    } else {
      this.crashes = 0;
    }
    this.deadList.push({ id: worker.id, startedAt: worker.startedAt, exitedAt: Date.now(), reason });
    if (this.deadList.length > DEAD_KEPT) this.deadList.shift();
  }

  /** Workers that exited on their own since the last healthy one, oldest first. */
  get dead(): readonly DeadWorker[] {
    return this.deadList;
  }

  /** A worker started at `startedAt` proved healthy: the ones that died before it are history. */
  recovered(startedAt: number): void {
    while (this.deadList.length > 0 && this.deadList[0]!.exitedAt <= startedAt) this.deadList.shift();
  }

  /** Forgets past crashes (the workers are being replaced on purpose). */
  reset(): void {
    this.crashes = 0;
    this.respawnAt = 0;
    this.deadList.length = 0;
  }
}

/**
 * The worker processes of one endpoint: at least min, up to max while jobs wait, idle ones above min
 * stopped after the idle timeout, crashed ones replaced; their output goes to the platform log.
 */
export class WorkerPool {
  private readonly processes = new Map<string, WorkerProcess>();
  private readonly timer: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private readonly unsubscribeStuck: () => void;
  private readonly exits: WorkerExits;
  private closed = false;
  /** Lifetimes of the processes that have exited, in ms: with the live ones', the endpoint's exact worker-seconds. */
  private exitedMs = 0;
  private startCount = 0;

  constructor(private readonly options: PoolOptions) {
    this.exits = new WorkerExits(options.log);
    this.unsubscribe = options.scheduler.onQueued((endpoint) => {
      if (endpoint === options.endpoint) this.scale();
    });
    this.unsubscribeStuck = options.scheduler.onStuck((endpoint, workerId, jobId) => {
      const worker = endpoint === options.endpoint ? this.processes.get(workerId) : undefined;
      if (!worker || worker.stopping) return;
      options.log
        .child({ subject: workerId })
        .warn(
          `Worker:${workerId} | still running stopped job ${jobId} (its handler blocks the event loop, so the abort signal cannot reach it); replacing the worker`,
        );
      this.stop(worker, STUCK_STOP_GRACE_MS);
      this.scale();
    });
    this.timer = setInterval(() => this.scale(), options.tickMs ?? 250);
    this.timer.unref();
    this.scale();
  }

  private get endpoint(): EndpointState {
    return this.options.endpoint;
  }

  /** Worker processes running and not being stopped. */
  get size(): number {
    return this.alive().length;
  }

  /** Started but not yet asking for jobs (health's `initializing`). */
  get initializing(): number {
    return this.alive().filter((p) => !this.isReady(p)).length;
  }

  /** Ids of the running workers, oldest first. */
  get workerIds(): string[] {
    return this.alive().map((p) => p.id);
  }

  /** Workers that exited on their own and are not yet followed by a healthy one (listed as unhealthy). */
  get dead(): readonly DeadWorker[] {
    return this.exits.dead;
  }

  /** Every worker process, stopping ones too, with its start time (the console's state and cold start). */
  get processList(): { id: string; pid?: number; startedAt: number; stopping: boolean }[] {
    return [...this.processes.values()].map((p) => ({
      id: p.id,
      pid: p.child.pid,
      startedAt: p.startedAt,
      stopping: p.stopping,
    }));
  }

  /** Seconds worker processes have run, start to exit, live ones until now: what a per-second bill counts. */
  get workerSeconds(): number {
    const now = Date.now();
    let ms = this.exitedMs;
    for (const p of this.processes.values()) ms += now - p.startedAt;
    return ms / 1000;
  }

  /** Worker processes started since the platform started. */
  get starts(): number {
    return this.startCount;
  }

  /** Replaces every worker (the handler file changed): old ones finish their jobs, new ones take the next. */
  restartAll(): void {
    this.exits.reset();
    for (const worker of this.alive()) this.stop(worker);
    this.scale();
  }

  /** Stops every worker, waiting for them to exit (killed after the grace period). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.unsubscribe();
    this.unsubscribeStuck();
    for (const worker of this.processes.values()) this.stop(worker);
    await Promise.all([...this.processes.values()].map((p) => p.exited));
  }

  /** Kills every worker process now, jobs in flight or not (a second Ctrl-C). */
  killAll(): void {
    for (const worker of this.processes.values()) kill(worker.child);
  }

  /** Brings the number of workers in line with the queue. */
  scale(): void {
    if (this.closed || !(this.endpoint.config.command || this.endpoint.config.launch)) return;
    this.killSlowStarters();
    const [min, max] = this.endpoint.config.workers;
    const alive = this.alive();
    // low-priority jobs wait for a worker without starting one (the platform's policy.lowPriority)
    const waiting = this.endpoint.queue.scaling;
    // Workers still starting, and job-takes parked right now, will pick up queued jobs without help.
    const coming = alive.filter((p) => !this.isReady(p)).length + this.endpoint.queue.waitingTakers;
    const wanted = Math.max(min, Math.min(max, alive.length + Math.max(0, waiting - coming)));
    if (wanted > alive.length && Date.now() >= this.exits.respawnAt) {
      for (let i = alive.length; i < wanted; i++) this.spawn();
      return;
    }
    if (this.endpoint.queue.size > 0) return;
    let count = alive.length;
    const now = Date.now();
    for (const worker of alive.reverse()) {
      if (count <= min) break;
      const record = this.endpoint.workers.get(worker.id);
      // One still loading its model server is not idle: it has not asked for a job yet.
      if (!record || record.readyAt === undefined || record.jobs.size > 0) continue;
      const idleFor = now - Math.max(record.idleSince, record.readyAt);
      if (idleFor >= this.endpoint.config.idleTimeoutMs) {
        this.options.log.info(`Worker:${worker.id} | idle for ${idleFor} ms; stopping it`);
        this.stop(worker);
        count--;
      }
    }
  }

  /** A worker still starting past RUNPOD_INIT_TIMEOUT is unhealthy (its own timer may be blocked): killed, counted as a crash. */
  private killSlowStarters(): void {
    const limit = this.options.initTimeoutMs;
    if (limit === undefined) return;
    const now = Date.now();
    for (const worker of this.alive()) {
      if (worker.timedOut || this.hasContacted(worker) || now - worker.startedAt < limit) continue;
      worker.timedOut = true;
      this.options.log.error(
        `Worker:${worker.id} | not ready after RUNPOD_INIT_TIMEOUT (${limit / 1000} s): unhealthy; killing it. Make start-up faster or raise RUNPOD_INIT_TIMEOUT (seconds).`,
      );
      kill(worker.child);
    }
  }

  private alive(): WorkerProcess[] {
    return [...this.processes.values()].filter((p) => !p.stopping);
  }

  private hasContacted(worker: WorkerProcess): boolean {
    worker.contacted ||= this.endpoint.workers.has(worker.id);
    return worker.contacted;
  }

  private isReady(worker: WorkerProcess): boolean {
    if (!worker.ready && this.endpoint.workers.get(worker.id)?.readyAt !== undefined) {
      worker.ready = true;
      this.exits.recovered(worker.startedAt);
    }
    return worker.ready;
  }

  private spawn(): void {
    const id = newShortId();
    const { config } = this.endpoint;
    const env = { ...config.env, ...this.options.workerEnv(id) };
    const launched = config.launch?.(env);
    const [command, ...args] = launched ? launched.argv : (config.command ?? []);
    if (!command) return;
    const log = this.options.log.child({ subject: id });
    const child = spawn(command, args, {
      cwd: config.cwd,
      env: launched
        ? { ...process.env, ...launched.env }
        : { ...process.env, ...env, [PARENT_PIPE_ENV]: "1" },
      // Its own process group: a terminal's Ctrl-C reaches the platform only, which sends the one SIGTERM.
      detached: true,
      // A local worker's stdin is a pipe from the platform: it ends when the platform dies, and the worker stops.
      stdio: [config.launch ? "ignore" : "pipe", "pipe", "pipe"],
    });
    // A container's processes get the worker's stop signals too (they do not share its process group).
    if (config.launch) markContainerRun(child);
    let resolveExit: () => void = () => {};
    const worker: WorkerProcess = {
      id,
      child,
      startedAt: Date.now(),
      contacted: false,
      ready: false,
      timedOut: false,
      stopping: false,
      exited: new Promise((resolve) => {
        resolveExit = resolve;
      }),
    };
    this.processes.set(id, worker);
    this.startCount++;
    log.info(`Worker:${id} | starting (pid ${child.pid}): ${[command, ...args].join(" ")}`);
    relayOutput(child, log);
    child.once("error", (err) => log.error(`Worker:${id} | could not start: ${err.message}`));
    child.once("close", (code, signal) => {
      this.processes.delete(id);
      this.exitedMs += Date.now() - worker.startedAt;
      resolveExit();
      this.exited(worker, code, signal);
    });
  }

  private stop(worker: WorkerProcess, graceMs = this.options.stopGraceMs): void {
    if (worker.stopping) return;
    worker.stopping = true;
    this.options.scheduler.drain(this.endpoint, worker.id);
    terminate(worker.child, worker.exited, graceMs);
  }

  private exited(worker: WorkerProcess, code: number | null, signal: NodeJS.Signals | null): void {
    const how = this.exits.logged(worker, code, signal);
    this.options.scheduler.workerGone(this.endpoint, worker.id, `worker process exited with ${how}`);
    if (worker.stopping || this.closed) return;
    this.exits.crashed(worker, code, how);
    this.scale();
  }
}
