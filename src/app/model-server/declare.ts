// server(): a model server (vLLM, llama-server, ComfyUI…) the worker runs beside its code, and its fetch-like client.
import { ArgumentError } from "../../flash-error.js";
import { currentJob } from "../../job/scope.js";
import { ServerExitedError, ServerStartError } from "./errors.js";

/** How a model server's process ended. */
export interface ServerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  error?: Error;
}

/** What the declaration needs of the running process the runtime starts (runtime/model-server/process.ts). */
export interface RunningServer {
  readonly exited: Promise<ServerExit>;
  /** The exit as a short cause; `during` (" while serving this job") goes after the exit. */
  describe(exit: ServerExit, during?: string): string;
}

/** What `server({...})` takes. */
export interface ServerOptions {
  /** The program to run with `args`; without `args`, a whole shell command line (`vllm serve Qwen/Qwen3-0.6B`). */
  command: string;
  /** The program's arguments; when given, `command` runs directly, without a shell. */
  args?: readonly string[];
  /** Variables added to the worker's environment for the server. */
  env?: Readonly<Record<string, string>>;
  /**
   * The port it listens on, on 127.0.0.1; `0` picks a free one when the worker starts it (each worker its own).
   * `{port}` in `command`, `args` or `env` is replaced with the port, so the server is told which.
   */
  port: number;
  /** The path that answers 200 once it is ready (default `/health`, as vLLM and llama-server serve it). */
  health?: string;
  /** Seconds it may take to become healthy when RUNPOD_INIT_TIMEOUT is not set (default 420, RunPod's 7 minutes). */
  startTimeout?: number;
  /** The subject of its log lines (default `server`). */
  name?: string;
  /** Queue jobs whose input is `{openai_route, openai_input}` go straight to the server (default true). */
  openai?: boolean;
}

/** The options, checked and with their defaults. */
export interface ServerSettings {
  readonly command: string;
  readonly args: readonly string[] | undefined;
  readonly env: Readonly<Record<string, string>>;
  readonly port: number;
  readonly health: string;
  readonly startTimeoutMs: number;
  readonly name: string;
  readonly openai: boolean;
}

/** RunPod marks a worker unhealthy when its cold start passes 7 minutes (docs: "Optimize cold starts"). */
export const DEFAULT_START_TIMEOUT_S = 420;
/** Jobs a server-backed queue worker runs at once unless the app says otherwise: batching servers want many. */
export const SERVER_CONCURRENCY = 16;
/** How long a failed request waits for the server's exit, so its error can name the exit instead of a reset. */
const EXIT_WAIT_MS = 2000;

const SERVER = Symbol.for("flash-worker.model-server");
/** Replaced with the server's port in its command, args and env: how a `port: 0` server learns its port. */
const PORT_PLACEHOLDER = "{port}";

/**
 * A model server declared in the app: the runtime starts it at worker start, waits for its health check, relays
 * its output, and stops it with the worker. `fetch(path)` calls it; inside a job, the job's AbortSignal is attached.
 */
export class ModelServer {
  readonly [SERVER] = true;
  readonly settings: ServerSettings;
  /** The running process, set by the runtime. */
  process: RunningServer | undefined;
  private started: number | undefined;

  constructor(options: ServerOptions) {
    this.settings = parseServerOptions(options);
  }

  /** The port it listens on: the declared one, or with `port: 0` the one picked when the worker started it. */
  get port(): number {
    const port = this.started ?? this.settings.port;
    if (port === 0) {
      throw new ServerStartError(
        `Model server '${this.settings.name}' has no port yet: with port: 0 one is picked when the worker starts it`,
      );
    }
    return port;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Set by the runtime as it starts the server: the port it listens on. Returns how to run it, with `{port}` in
   * `command`, `args` and `env` replaced by that port.
   * @internal
   */
  listenOn(port: number): ServerSettings {
    this.started = port;
    const fill = (text: string) => text.replaceAll(PORT_PLACEHOLDER, String(port));
    const { command, args, env } = this.settings;
    return {
      ...this.settings,
      port,
      command: fill(command),
      args: args?.map(fill),
      env: Object.fromEntries(Object.entries(env).map(([key, value]) => [key, fill(value)])),
    };
  }

  /**
   * fetch() with the server's base URL bound: `server.fetch("/v1/models")`. Inside a job the job's signal is
   * attached (cancel and the execution timeout abort the request); a request the server's exit cut off rejects
   * with a ServerExitedError naming the exit (its last lines stay in the worker's log).
   */
  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const job = currentJob()?.signal;
    const signal = job && init.signal ? AbortSignal.any([job, init.signal]) : (init.signal ?? job);
    try {
      return await fetch(new URL(path, this.url), signal ? { ...init, signal } : init);
    } catch (err) {
      throw (await this.exitError()) ?? err;
    }
  }

  /** The server's exit as an error, if it has exited or exits within a moment; undefined while it runs. */
  async exitError(
    during = currentJob() ? " while serving this job" : "",
  ): Promise<ServerExitedError | undefined> {
    const running = this.process;
    if (!running) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const exit = await Promise.race([
      running.exited,
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), EXIT_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!exit) return undefined;
    return new ServerExitedError(`Model server '${this.settings.name}' ${running.describe(exit, during)}`);
  }
}

/** Declares a model server; pass it to `handler(fn, { server })` or `new Endpoint({ server })`. */
export function server(options: ServerOptions): ModelServer {
  return new ModelServer(options);
}

/** True for a ModelServer from any copy of the package. */
export function isModelServer(value: unknown): value is ModelServer {
  return typeof value === "object" && value !== null && (value as { [SERVER]?: unknown })[SERVER] === true;
}

const KNOWN = new Set(["command", "args", "env", "port", "health", "startTimeout", "name", "openai"]);

function parseServerOptions(options: ServerOptions): ServerSettings {
  const fail = (message: string): never => {
    throw new ArgumentError(`server(): ${message}`);
  };
  if (typeof options !== "object" || options === null) fail("options must be an object");
  const unknown = Object.keys(options).filter((key) => !KNOWN.has(key));
  if (unknown.length > 0) fail(`unknown option(s): ${unknown.join(", ")}; expected ${[...KNOWN].join(", ")}`);
  const { command, args, env = {}, port, health = "/health", startTimeout, name = "server" } = options;
  if (typeof command !== "string" || command.trim() === "")
    fail(`command must be a non-empty string, e.g. "vllm serve Qwen/Qwen3-0.6B", got ${String(command)}`);
  if (args !== undefined && (!Array.isArray(args) || args.some((a) => typeof a !== "string")))
    fail("args must be a list of strings");
  if (typeof env !== "object" || env === null || Object.values(env).some((v) => typeof v !== "string"))
    fail("env must be an object of strings");
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`port must be a whole number from 1 to 65535, or 0 for a free one per worker, got ${String(port)}`);
  const told = [command, ...(args ?? []), ...Object.values(env)].some((text) =>
    text.includes(PORT_PLACEHOLDER),
  );
  if (port === 0 && !told)
    fail(
      `port: 0 picks a free port when the worker starts; put ${PORT_PLACEHOLDER} in command, args or env to tell the server which, e.g. "vllm serve Qwen/Qwen3-0.6B --port ${PORT_PLACEHOLDER}"`,
    );
  if (typeof health !== "string" || !health.startsWith("/"))
    fail(`health must be a path starting with /, got ${String(health)}`);
  if (startTimeout !== undefined && !(typeof startTimeout === "number" && startTimeout > 0))
    fail(`startTimeout must be a number of seconds above 0, got ${String(startTimeout)}`);
  if (typeof name !== "string" || !/^[\w.-]+$/.test(name))
    fail(`name must be letters, digits, '.', '_' or '-', got ${String(name)}`);
  return {
    command: command.trim(),
    args,
    env,
    port,
    health,
    startTimeoutMs: (startTimeout ?? DEFAULT_START_TIMEOUT_S) * 1000,
    name,
    openai: options.openai ?? true,
  };
}
