// Load-balanced mode: the endpoint's routes served on PORT until SIGTERM, then drained.

import { declarationOf, type Endpoint } from "../../app/endpoint.js";
import { ServerStartError } from "../../app/model-server/errors.js";
import { pathMatcher } from "../../app/rules.js";
import { isEndpointConfigError } from "../../app/settings.js";
import { isFlashError } from "../../flash-error.js";
import { nextShutdownSignal, onShutdownSignal, whenStrayError } from "../../lifecycle.js";
import type { Logger } from "../../log/index.js";
import type { WorkerConfig } from "../config/options.js";
import { proxyUpgrades } from "../model-server/proxy.js";
import type { SupervisedServer } from "../model-server/supervise.js";
import { addHealthPath, type HealthListener, healthLine, listenHealth } from "./health.js";
import { RouteServer } from "./server.js";
import { addSocketRoutes } from "./sockets.js";

/** After the model server died: how long the requests it cut off get to be answered before connections close. */
const DIED_GRACE_MS = 1000;

export interface ServeOptions {
  /** Resolves when the server should stop; default: SIGTERM or SIGINT. */
  stop?: Promise<string>;
}

/**
 * Load-balanced mode: serve the endpoint's routes on `config.port`, `/ping` 204 while the onStart hooks
 * run and 200 once ready; on SIGTERM stop taking requests and let in-flight ones finish within the grace period.
 */
export async function serveEndpoint(
  endpoint: Endpoint,
  config: WorkerConfig,
  log: Logger,
  options: ServeOptions = {},
): Promise<number> {
  const name = endpoint.name ?? "endpoint";
  const lbLog = log.child({ subject: name });
  try {
    declarationOf(endpoint).assertRoutes();
  } catch (err) {
    if (!isEndpointConfigError(err)) throw err;
    lbLog.error(err.message);
    return 1;
  }
  const signals = options.stop ? undefined : nextShutdownSignal();
  const stop = options.stop ?? signals!.signal.then((signal) => `${signal} received`);
  // A model server starts loading before the port opens; /ping answers 204 until its health check answers 200.
  const model = endpoint.server;
  let supervised: SupervisedServer | undefined;
  try {
    supervised = model
      ? await (await import("../model-server/supervise.js")).startServer(model, config, lbLog)
      : undefined;
  } catch (err) {
    if (!isFlashError(err, "SERVER_START_FAILED")) throw err;
    lbLog.error(err.message);
    signals?.dispose();
    return 1;
  }
  const giveUp = new AbortController();
  void stop.then(() => giveUp.abort());
  const ready = supervised
    ? async () => {
        const health = await supervised.ready(giveUp.signal);
        if (!health.ok)
          throw new ServerStartError(
            `Model server '${supervised.server.settings.name}' failed: ${health.reason}`,
          );
      }
    : undefined;
  const server = new RouteServer(endpoint, { log: lbLog, server: model, ready });
  addHealthPath(server.app, config.healthPath, declarationOf(endpoint).routes);
  addSocketRoutes(server.app, declarationOf(endpoint).sockets, lbLog);
  let health: HealthListener | undefined;
  try {
    await server.app.listen({ host: config.host, port: config.port });
  } catch (err) {
    lbLog.error(`Could not listen on ${config.host}:${config.port}: ${(err as Error).message}`);
    signals?.dispose();
    await supervised?.stop();
    return 1;
  }
  // After listen, so @fastify/websocket's listener is in place to take the upgrades TS declares.
  if (model) {
    const sockets = declarationOf(endpoint).sockets.map((s) => pathMatcher(s.path));
    proxyUpgrades(server.app.server, model, {
      ready: () => server.state === "READY",
      declared: (path) => sockets.some((matcher) => matcher.test(path)),
      endpoint: name,
    });
  }
  const address = server.app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  lbLog.info(`Starting ${name} endpoint | listening on http://${config.host}:${port}`);
  // PORT_HEALTH apart from PORT: the health check answers on a listener of its own too.
  if (config.healthPort !== undefined && config.healthPort !== port) {
    try {
      health = await listenHealth(server.app, {
        host: config.host,
        port: config.healthPort,
        path: config.healthPath,
        log: lbLog,
      });
    } catch (err) {
      lbLog.error(
        `Could not listen on ${config.host}:${config.healthPort} (PORT_HEALTH): ${(err as Error).message}`,
      );
      await server.close(0);
      await supervised?.stop();
      signals?.dispose();
      return 1;
    }
    lbLog.info(healthLine(config.host, health.port, config.healthPath));
  }
  for (const route of declarationOf(endpoint).routes) lbLog.debug(`Route ${route.method} ${route.path}`);

  // The model server exiting, or a stray error (its requests answered 500 first), ends the endpoint as a signal
  // would, and the exit code says it failed.
  let died: Error | undefined;
  let stopStray = () => {};
  const strayed = new Promise<string>((resolve) => {
    stopStray = whenStrayError((err) => {
      died = err;
      server.failInFlight(err);
      resolve("a stray error");
    });
  });
  const endings = [stop, strayed];
  if (supervised)
    endings.push(
      supervised.died.then((err) => {
        died = err;
        lbLog.error(err.message);
        return "the model server exited";
      }),
    );
  const ended = Promise.race(endings);
  const started = server.start();
  const first = await Promise.race([started.then((ok) => ({ ok })), ended.then((reason) => ({ reason }))]);
  if ("ok" in first && !first.ok) {
    lbLog.error(`Endpoint ${name} failed to start; exiting.`);
    stopStray();
    await server.close(0);
    await supervised?.stop();
    await health?.close();
    signals?.dispose();
    return 1;
  }
  if ("ok" in first) lbLog.info(`Endpoint ${name} ready | ${config.healthPath} answers 200`);

  const reason = "reason" in first ? first.reason : await ended;
  signals?.dispose();
  lbLog.info(`Shutting down ${name} endpoint (${reason}); ${server.inFlight} request(s) in flight`);
  // A second signal ends the grace period at once, as in the queue worker.
  const stopListening = signals ? onShutdownSignal(() => server.endGrace()) : () => {};
  // A server that died leaves a moment for the requests it cut off to get their 502 naming the exit.
  await server.close(died ? DIED_GRACE_MS : config.gracePeriodMs);
  await health?.close();
  stopListening();
  stopStray();
  await supervised?.stop();
  lbLog.info(`Endpoint ${name} stopped.`);
  return died ? 1 : 0;
}
