// The runtime's side of a model server: start it at worker start, wait for its health, stop its group at the end.
import { connect } from "node:net";
import type { ModelServer } from "../../app/model-server/declare.js";
import { ServerExitedError, ServerStartError } from "../../app/model-server/errors.js";
import type { Logger } from "../../log/index.js";
import type { WorkerConfig } from "../options.js";
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

/**
 * Spawns the server now; its output becomes log lines with its name as the subject. Throws ServerStartError
 * when its port is already taken: the health check would otherwise be answered by someone else's server.
 */
export async function startServer(
  server: ModelServer,
  config: WorkerConfig,
  log: Logger,
): Promise<SupervisedServer> {
  const { settings } = server;
  if (await portTaken(settings.port)) {
    throw new ServerStartError(
      `Model server '${settings.name}' cannot start: port ${settings.port} on 127.0.0.1 is already in use (another worker's server, or one left running); give each worker's server a port of its own`,
    );
  }
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
