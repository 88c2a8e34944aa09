// startApp(): picks the mode from flags and environment and runs the app in it; resolves to an exit code.

import { declarationOf } from "../app/endpoint.js";
import { serverOf } from "../app/model-server/handler.js";
import { type App, registry } from "../app/registry.js";
import { isFlashError } from "../flash-error.js";
import type { HandlerDefinition } from "../job/definition.js";
import {
  guardProcess,
  nextShutdownSignal,
  onShutdownSignal,
  stopWithParent,
  whenStrayError,
} from "../lifecycle.js";
import { type Logger, openLogger, stdoutToStderr } from "../log/index.js";
import { keepTickShapes } from "../tick-shapes.js";
import { startTracing, stopTracing } from "../trace/index.js";
import { VERSION } from "../version.js";
import { DEFAULT_INIT_TIMEOUT_MS, readWorkerConfig, type WorkerConfig } from "./config/options.js";
import type { SupervisedServer } from "./model-server/supervise.js";
import type { PlatformClient } from "./queue/client.js";

export interface StartOptions {
  argv?: readonly string[];
  env?: Record<string, string | undefined>;
  /** The handler file, when started by `flash run/start`. */
  file?: string;
  /** `flash run`: one local test (for a load-balanced endpoint, the requests its test input describes). */
  oneShot?: boolean;
}

/** When startApp was called: the app's module is imported by then (the start log's "import" phase, ms since the process start). */
let appImportedAt: number | undefined;

let queueLoading: ReturnType<typeof loadQueueModules> | undefined;

/** The queue worker's modules, loaded on demand (the one-shot path stays light), all at once and only once. */
function queueModules(): ReturnType<typeof loadQueueModules> {
  queueLoading ??= loadQueueModules();
  return queueLoading;
}

/** Also what docker/install.sh compiles into the images' compile cache beside the CLI and `import "flash-worker"`. */
export function loadQueueModules() {
  return Promise.all([
    import("./queue/http-client.js"),
    import("./queue/heartbeat.js"),
    import("./queue/worker.js"),
    import("./fitness/startup.js"),
    import("../gpu/facts.js"),
    import("./cold-start.js"),
  ]);
}

/**
 * The queue worker: take, run, report. `inProcess` is a platform in this process (--rp_serve_api): it is
 * called directly, and there is no heartbeat, as the worker's open job-stop call already says it is alive.
 */
async function runQueueWorker(
  app: HandlerDefinition,
  config: WorkerConfig,
  log: Logger,
  inProcess?: PlatformClient,
): Promise<number> {
  const importedAt = appImportedAt ?? performance.now();
  const [
    { createPlatformClient },
    { startHeartbeat },
    { QueueWorker },
    { runStartupChecks, UNHEALTHY_REPORT_TIMEOUT_MS },
    { gpuFacts },
    { coldStart, logStarted, runWarmUp },
  ] = await queueModules();
  const workerLog = log.child({ subject: "worker" });
  const client = inProcess ?? createPlatformClient({ platform: config.platform, log: workerLog });
  // Fitness checks (docs/protocol.md §10) and warm-up, before the heartbeat and the first take, all within
  // RUNPOD_INIT_TIMEOUT (§10.1); a failure or the timeout exits 1.
  // A model server starts first: it loads while the fitness checks and the warm-up run.
  const server = serverOf(app);
  let supervised: SupervisedServer | undefined;
  try {
    supervised = server
      ? await (await import("./model-server/supervise.js")).startServer(server, config, workerLog)
      : undefined;
  } catch (err) {
    if (!isFlashError(err, "SERVER_START_FAILED")) throw err;
    await reportServerUnhealthy(client, workerLog, err.message);
    return 1;
  }
  const fitness = {
    name: "fitness",
    run: async () =>
      runStartupChecks({
        config: config.fitness,
        facts: await gpuFacts(),
        log: workerLog,
        reportUnhealthy: client.reportUnhealthy,
      }),
  };
  const report = {
    log: workerLog,
    reportUnhealthy: client.reportUnhealthy,
    reportTimeoutMs: UNHEALTHY_REPORT_TIMEOUT_MS,
  };
  // The warm-up (onStart of the handler or its Endpoint; a hand-written definition has none), §10.2.
  const warmUp = { name: "warm-up", run: () => runWarmUp(app.startHooks ?? [], report) };
  const started = await coldStart({
    phases: [fitness, warmUp],
    initTimeoutMs: config.initTimeoutMs ?? DEFAULT_INIT_TIMEOUT_MS,
    importedAt,
    ...report,
  });
  if (!started) {
    await supervised?.stop();
    return 1;
  }
  let heartbeat: ReturnType<typeof startHeartbeat>;
  if (supervised) {
    // Pings go on while the server loads, so the platform keeps the worker; no job is taken until it is healthy.
    heartbeat = inProcess ? undefined : startHeartbeat(config, workerLog);
    const waitStarted = performance.now();
    const shutdown = nextShutdownSignal();
    const stopWaiting = new AbortController();
    void shutdown.signal.then(() => stopWaiting.abort());
    const health = await supervised.ready(stopWaiting.signal);
    shutdown.dispose();
    if (!health.ok) {
      await supervised.stop();
      if (!stopWaiting.signal.aborted) await reportServerUnhealthy(client, workerLog, health.reason);
      await heartbeat?.stop();
      return stopWaiting.signal.aborted ? 0 : 1;
    }
    started.push(`model server ${Math.round(performance.now() - waitStarted)} ms`);
  }
  // Ready only now: a model server's load is part of the cold start.
  logStarted(workerLog, started);
  const jobIds = { update: (ids: Iterable<string>) => heartbeat?.update(ids) };
  const worker = new QueueWorker({ definition: app, config, client, log: workerLog, heartbeat: jobIds });
  const stopListening = onShutdownSignal((signal) => worker.shutdown(`${signal} received`));
  // The server dying fails the jobs in flight (each answered), then the worker reports unhealthy and exits 1.
  let died: Error | undefined;
  void supervised?.died.then((err) => {
    died = err;
    workerLog.error(err.message);
    worker.fail("Model server exited", supervised.jobError());
  });
  // A stray error fails the jobs in flight with it (each answered), and the worker exits 1 (docs/design.md §4.10).
  let stray: Error | undefined;
  const stopStray = whenStrayError((err) => {
    stray = err;
    worker.fail(err.message, err);
  });
  const running = worker.run();
  // Started once the first job-take is on its way: its thread's boot then does not delay the first job.
  heartbeat ??= inProcess ? undefined : startHeartbeat(config, workerLog);
  // Jobs taken before the thread existed are in its first ping.
  heartbeat?.update(worker.jobIds);
  await running;
  stopListening();
  stopStray();
  await supervised?.stop();
  if (died) await reportServerUnhealthy(client, workerLog, died.message);
  await heartbeat?.stop();
  if (stray) workerLog.error("Worker exits after a stray error; the platform replaces it.");
  return died || stray ? 1 : 0;
}

/** As a failed fitness check is reported (docs/protocol.md §10): the platform is told, and the worker exits 1. */
async function reportServerUnhealthy(client: PlatformClient, log: Logger, reason: string): Promise<void> {
  const { UNHEALTHY_REPORT_TIMEOUT_MS } = await import("./fitness/startup.js");
  log.error(`Model server failed: ${reason}`);
  await client.reportUnhealthy("model-server", reason, UNHEALTHY_REPORT_TIMEOUT_MS);
  log.error("Worker is unhealthy, exiting.");
}

/** The one-shot test with the app's model server started, healthy, and stopped after; 1 if it never got healthy. */
async function withServerRunning(
  app: App,
  config: WorkerConfig,
  log: Logger,
  run: () => Promise<number>,
): Promise<number> {
  const server = serverOf(app);
  if (!server) return run();
  const { startServer } = await import("./model-server/supervise.js");
  let supervised: SupervisedServer;
  try {
    supervised = await startServer(server, config, log);
  } catch (err) {
    if (!isFlashError(err, "SERVER_START_FAILED")) throw err;
    log.error(err.message);
    return 1;
  }
  const health = await supervised.ready();
  try {
    if (!health.ok) {
      log.error(`Model server failed: ${health.reason}`);
      return 1;
    }
    return await run();
  } finally {
    await supervised.stop();
  }
}

/** Picks the mode from flags and environment (docs/design.md §2) and runs the app; resolves to an exit code. */
export async function startApp(given: App, options: StartOptions = {}): Promise<number> {
  appImportedAt ??= performance.now();
  keepTickShapes();
  // An Endpoint used with .handler(fn) is a queue-based endpoint.
  let app = given.kind === "endpoint" ? (declarationOf(given).queueHandler ?? given) : given;
  if (app.kind === "handler" && registry().remotes.size > 0) {
    const { withRemoteFunctions } = await import("../app/remote.js");
    app = withRemoteFunctions(app);
  }
  const env = options.env ?? process.env;
  let config: WorkerConfig;
  try {
    config = readWorkerConfig(options.argv ?? process.argv.slice(2), env).config;
  } catch (err) {
    if (isFlashError(err, "CONFIG_INVALID")) {
      process.stderr.write(`flash-worker: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  config.file = options.file;
  const testing = options.oneShot || config.testInput !== undefined;
  const oneShot =
    app.kind === "endpoint" ? testing : !config.serveApi && (testing || !config.platform.getJobUrl);
  // A queue worker's modules load while the logger opens and the GPU probe runs (runMode's last branch).
  if (app.kind !== "endpoint" && !config.serveApi && !oneShot) queueModules().catch(() => undefined);
  // The one-shot test's stdout carries the result body alone; its logs (and the handler's output) go to stderr.
  const print = oneShot ? stdoutToStderr() : undefined;
  const log = await openLogger({
    level: config.logLevel,
    json: config.logJson,
    format: config.logFormat,
    destination: oneShot ? process.stderr : undefined,
  });
  // A stray error is logged, and ends the process with exit code 1 (docs/design.md §4.10).
  guardProcess(log.child({ subject: "flash-worker" }));
  stopWithParent(env);
  const banner = `--- Starting Serverless Worker |  Version ${VERSION} ---`;
  // With LOG_FORMAT=json the banner is a record like every other line, and so is the app's console output.
  if (config.logFormat === "json") {
    log.child({ subject: "flash-worker" }).info(banner);
    (await import("./json-console.js")).consoleAsRecords(log);
  } else process.stdout.write(`${banner}\n`);
  const { gpuFacts, logGpus } = await import("../gpu/facts.js");
  logGpus(log, await gpuFacts());
  // OTLP traces when an OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set; the spans left go out before the exit code.
  await startTracing(env, log);
  try {
    return await runMode(app, config, log, print);
  } finally {
    await stopTracing();
  }
}

/** Runs the app in its mode: a load-balanced endpoint, the in-process API, the one-shot test or the queue worker. */
async function runMode(
  app: App,
  config: WorkerConfig,
  log: Logger,
  print: ((text: string) => void) | undefined,
): Promise<number> {
  if (app.kind === "endpoint") {
    // Loaded on demand so queue workers never pay for the HTTP server.
    if (print) {
      const { prepareLocalRequests, runLocalRequests } = await import("./lb/local.js");
      const local = log.child({ subject: "local" });
      // Checked before the server starts: a wrong test input must not wait out a model's load.
      const requests = prepareLocalRequests(app, config, local);
      if (!requests) return 1;
      // A declared model server runs for the test requests too: the routes TS does not declare go to it.
      return withServerRunning(app, config, local, () => runLocalRequests(app, requests, local, print));
    }
    const { serveEndpoint } = await import("./lb/serve.js");
    return serveEndpoint(app, config, log);
  }
  if (config.serveApi) {
    const { serveApi } = await import("./serve-api.js");
    return serveApi(app, config, log, runQueueWorker);
  }
  if (print) {
    const { prepareTestJob, runOneShot } = await import("./one-shot.js");
    const local = log.child({ subject: "local" });
    // Checked before the server starts: a wrong test input must not wait out a model's load.
    const job = prepareTestJob(config, local);
    if (!job) return 1;
    return withServerRunning(app, config, local, () => runOneShot(app, config, local, print, job));
  }
  return runQueueWorker(app, config, log);
}
