// The runtime's side of a model server: start it at worker start, wait for its health, stop its group at the end.
import type { Config } from "../config/index.js";
import type { Logger } from "../log/index.js";
import type { ModelServer } from "./declare.js";
import { ServerExitedError } from "./errors.js";
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

/** Spawns the server now; its output becomes log lines with its name as the subject. */
export function startServer(server: ModelServer, config: Config, log: Logger): SupervisedServer {
  const { settings } = server;
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
