// The runtime's side of a model server: start it at worker start, wait for its health, stop its group at the end.
import { type AddressInfo, connect, createServer } from "node:net";
import type { ModelServer } from "../../app/model-server/declare.js";
import { ServerExitedError, ServerStartError } from "../../app/model-server/errors.js";
import type { Logger } from "../../log/index.js";
import type { WorkerConfig } from "../config/options.js";
import { type Health, waitUntilHealthy } from "./health.js";
import { ServerProcess } from "./process.js";

/** After SIGTERM, the server's group gets this long to exit before SIGKILL (vLLM frees GPU memory on the way out). */
export const SERVER_STOP_MS = 10_000;

/** A started model server, as the queue worker and the load-balanced server use it. */
export interface SupervisedServer {
  readonly server: ModelServer;
  readonly process: ServerProcess;
  /** Waits for its health check to answer 200; `stop` gives up early (shutdown before it was ready). */
  ready(stop?: AbortSignal): Promise<Health>;
  /** Resolves with the error to report when the server exits without being stopped; never while it runs. */
  readonly died: Promise<ServerExitedError>;
  /** Once `died` resolved: the error the jobs in flight fail with ("… while serving this job; …"). */
  jobError(): ServerExitedError;
  /** SIGTERM to its process group, SIGKILL after SERVER_STOP_MS. */
  stop(): Promise<void>;
}

/** Whether something already listens on 127.0.0.1:`port`. */
function portTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** A port nothing listens on now, on 127.0.0.1, picked by the system: a `port: 0` server's. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Spawns the server now, on its port or (`port: 0`) a free one; its output becomes log lines with its name as the
 * subject. Throws ServerStartError when a fixed port is already taken: someone else's server would answer its health.
 */
export async function startServer(
  server: ModelServer,
  config: WorkerConfig,
  log: Logger,
): Promise<SupervisedServer> {
  const declared = server.settings;
  if (declared.port !== 0 && (await portTaken(declared.port))) {
    throw new ServerStartError(
      `Model server '${declared.name}' cannot start: port ${declared.port} on 127.0.0.1 is already in use (another worker's server, or one left running); give it port: 0 and {port} in its command for a free port per worker`,
    );
  }
  const settings = server.listenOn(declared.port === 0 ? await freePort() : declared.port);
  const serverLog = log.child({ subject: settings.name });
  const shown = settings.args ? [settings.command, ...settings.args].join(" ") : settings.command;
  const proc = new ServerProcess(settings, serverLog);
  log.info(
    `Starting model server '${settings.name}' (pid ${proc.pid ?? "none"}): ${shown} (port ${settings.port})`,
  );
  server.process = proc;
  const timeoutMs = config.initTimeoutMs ?? settings.startTimeoutMs;
  let stopping = false;
  const died = proc.exited.then(
    (exit) =>
      new Promise<ServerExitedError>((resolve) => {
        if (!stopping)
          resolve(new ServerExitedError(`Model server '${settings.name}' ${proc.describe(exit)}`));
      }),
  );
  return {
    server,
    process: proc,
    died,
    jobError() {
      const exit = proc.exit ?? { code: null, signal: null };
      return new ServerExitedError(
        `Model server '${settings.name}' ${proc.describe(exit, " while serving this job")}`,
      );
    },
    async ready(stop) {
      const health = await waitUntilHealthy(proc, `${server.url}${settings.health}`, timeoutMs, stop);
      if (health.ok)
        log.info(`Model server '${settings.name}' is ready. (${(health.ms / 1000).toFixed(1)} s)`);
      return health;
    },
    async stop() {
      stopping = true;
      if (proc.exit) return;
      log.info(`Stopping model server '${settings.name}'.`);
      const exit = await proc.stop(SERVER_STOP_MS);
      if (exit.signal === "SIGKILL") log.warn(`Model server '${settings.name}' ignored SIGTERM; killed.`);
    },
  };
}
