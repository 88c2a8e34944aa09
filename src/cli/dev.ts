import { existsSync, readFileSync, watch } from "node:fs";
import { dirname, extname, join, relative } from "node:path";
import { endpointIdFor } from "../build/endpoint-id.js";
import { type Config, ConfigError, parseConfig } from "../config/index.js";
import type { ContainerToolOptions } from "../containers/tool.js";
import { createLogger, type Logger } from "../log/index.js";
import {
  curlCommand,
  type EndpointInit,
  newApiKey,
  type Platform,
  startPlatform,
  WORKER_STOP_GRACE_MS,
} from "../platform/index.js";
import { type DevApp, describeApp, lbCurlCommand } from "./dev-app.js";
import { findHandlerFile } from "./load.js";

export { endpointIdFor };

export const summary = "the local platform on 127.0.0.1:8000 with workers running the handler file";

/** Files whose change restarts the workers. */
const SOURCE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".json"]);
/** Workers for a plain handler(), which declares none: one kept warm, so the first job starts at once. */
const DEV_WORKERS: [number, number] = [1, 3];
/** Editors write a file in several steps: one restart per burst of changes. */
const RESTART_DEBOUNCE_MS = 300;

/** What dev and serve read from the command line, through the one config parser. */
export interface LocalPlatformArgs {
  config: Config;
  host: string;
  port: number;
  apiKey: string;
  keyGenerated: boolean;
  positional: string[];
}

/**
 * Parses dev/serve flags: `--host`/`--port` are the local API server's (runpod-python's
 * --rp_api_host/--rp_api_port), the rest goes through the shared options.
 */
export function parseLocalArgs(args: readonly string[], env = process.env): LocalPlatformArgs {
  const mapped = args.map((arg) =>
    arg.replace(/^--host(?==|$)/, "--api-host").replace(/^--port(?==|$)/, "--api-port"),
  );
  const { config, rest } = parseConfig(mapped, env);
  const unknown = rest.find((arg) => arg.startsWith("-"));
  if (unknown) throw new ConfigError(`Unknown option ${unknown}`);
  const generated = config.localApiKey === undefined;
  return {
    config,
    // uvicorn's "localhost" is IPv4 loopback; binding it here avoids a second, IPv6 listener.
    host: config.apiHost === "localhost" ? "127.0.0.1" : config.apiHost,
    port: config.apiPort,
    apiKey: config.localApiKey ?? newApiKey(),
    keyGenerated: generated,
    positional: rest,
  };
}

/** The container tool settings of the platform's deployed endpoints (FLASH_CONTAINER_TOOL, FLASH_CONTAINER_STORAGE). */
export function containerOptions(config: Config): ContainerToolOptions {
  return {
    ...(config.containerTool ? { tool: config.containerTool } : {}),
    ...(config.containerStorage ? { storage: config.containerStorage } : {}),
  };
}

/** The console's address with the key in the fragment: the page logs in from it and browsers never send it. */
export function consoleUrl(platform: Platform): string {
  return `${platform.url}/#key=${encodeURIComponent(platform.apiKey)}`;
}

/** The handler's test_input.json beside it, compacted, or a minimal job. */
function sampleBody(file: string): string {
  const path = join(dirname(file), "test_input.json");
  if (existsSync(path)) {
    try {
      const parsed = JSON.parse(readFileSync(path, "utf8")) as unknown;
      if (typeof parsed === "object" && parsed !== null && "input" in parsed) return JSON.stringify(parsed);
    } catch {
      // A broken sample is the user's to fix; the curl line falls back to a minimal job.
    }
  }
  return '{"input":{}}';
}

/** Resolves on the first SIGINT or SIGTERM. */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off("SIGINT", on);
      process.off("SIGTERM", on);
      resolve(signal);
    };
    process.on("SIGINT", on);
    process.on("SIGTERM", on);
  });
}

/**
 * Waits for Ctrl-C (or SIGTERM), then closes the platform: jobs in flight get the grace period, and a
 * second signal kills the workers at once.
 */
export async function closeOnSignal(platform: Platform, log: Logger, before?: () => void): Promise<void> {
  const signal = await untilSignal();
  log.info(
    `${signal} received; stopping workers and the platform (jobs in flight get up to ${WORKER_STOP_GRACE_MS / 1000} s; press Ctrl-C again to stop them now)`,
  );
  void untilSignal().then((again) => {
    log.warn(`${again} received again; killing the workers now`);
    platform.killWorkers();
  });
  before?.();
  await platform.close();
}

/** Restarts the endpoint's workers when a source file in the handler's directory changes. */
function watchHandler(file: string, platform: Platform, endpointId: string, log: Logger): () => void {
  let timer: NodeJS.Timeout | undefined;
  const changed = new Set<string>();
  const watcher = watch(dirname(file), (_event, name) => {
    if (!name || !SOURCE_EXTENSIONS.has(extname(name))) return;
    changed.add(name);
    clearTimeout(timer);
    timer = setTimeout(() => {
      log.info(`${[...changed].join(", ")} changed; restarting workers`);
      changed.clear();
      platform.pool(endpointId)?.restartAll();
      platform.lb.get(endpointId)?.restartAll();
    }, RESTART_DEBOUNCE_MS);
  });
  watcher.on("error", (err) => log.warn(`Not watching ${dirname(file)} any more: ${err.message}`));
  return () => {
    clearTimeout(timer);
    watcher.close();
  };
}

interface DevEndpoint {
  file: string;
  id: string;
  app: DevApp;
  endpoint: EndpointInit & { id: string; file: string };
}

/** `flash dev <handler file ...>`: the local platform plus workers for each file (one endpoint each), restarted when it changes. */
export async function run(args: string[]): Promise<number> {
  let parsed: LocalPlatformArgs;
  let files: string[];
  try {
    parsed = parseLocalArgs(args);
    files =
      parsed.positional.length > 0
        ? parsed.positional.map((f) => findHandlerFile(f))
        : [findHandlerFile(undefined)];
  } catch (err) {
    process.stderr.write(`flash dev: ${(err as Error).message}\n`);
    return 1;
  }
  const { config } = parsed;
  const log = createLogger({ level: config.logLevel, json: config.logJson });
  const used = new Set<string>();
  const apps: DevEndpoint[] = [];
  for (const file of files) {
    const app = await describeApp(file);
    // Named as deploy names it; two files with the same name in different folders still get distinct ids.
    const base = endpointIdFor(file, app.name);
    let id = base;
    for (let n = 2; used.has(id); n++) id = `${base}-${n}`;
    used.add(id);
    const endpoint = {
      id,
      name: relative(process.cwd(), file) || file,
      file,
      // --workers, else the Endpoint's declared range, else one worker kept warm and up to three.
      workers: config.localWorkers ?? app.workers ?? DEV_WORKERS,
      cwd: process.cwd(),
      ...(app.executionTimeoutMs ? { executionTimeoutMs: app.executionTimeoutMs } : {}),
    };
    apps.push({ file, id, app, endpoint });
  }
  const platform = await startPlatform({
    host: parsed.host,
    port: parsed.port,
    // Left to the platform when not chosen: it generates one, and refuses a non-loopback address without one.
    ...(parsed.keyGenerated ? {} : { apiKey: parsed.apiKey }),
    logger: log,
    // Endpoints deployed to it through REST v2 (flash deploy --api-url) run their images with this tool.
    containers: containerOptions(parsed.config),
    // An app with routes is a load-balanced endpoint: its workers serve HTTP behind /lb/<id>/.
    endpoints: apps.filter((a) => !a.app.loadBalanced).map((a) => a.endpoint),
    loadBalanced: apps.filter((a) => a.app.loadBalanced).map((a) => a.endpoint),
  });
  const stops = apps.map((a) => watchHandler(a.file, platform, a.id, log.child({ subject: "dev" })));
  const tryLine = (a: DevEndpoint) =>
    a.app.loadBalanced
      ? lbCurlCommand(platform.url, a.id, platform.apiKey, a.file, a.app.routes)
      : curlCommand(platform, a.id, sampleBody(a.file));
  process.stdout.write(
    [
      ...apps.map((a) =>
        a.app.loadBalanced
          ? `flash dev: ${relative(process.cwd(), a.file)} is load-balanced endpoint "${a.id}" at ${platform.url}/lb/${a.id}`
          : `flash dev: ${relative(process.cwd(), a.file)} is endpoint "${a.id}" at ${platform.url}/v2/${a.id}`,
      ),
      `API key: ${platform.apiKey}${parsed.keyGenerated ? " (generated; pass --api-key to choose one)" : ""}`,
      `Console: ${consoleUrl(platform)}`,
      ...apps.slice(1).map((a) => `Also: ${tryLine(a)}`),
      `Ready. Try: ${tryLine(apps[0]!)}`,
      "",
    ].join("\n"),
  );
  await closeOnSignal(platform, log.child({ subject: "dev" }), () => {
    for (const stop of stops) stop();
  });
  return 0;
}
