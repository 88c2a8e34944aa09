// `flash dev`: the local platform with workers running each handler file, restarted when its module graph, its model
// server's files or a --watch path changes.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { endpointIdFor, findHandlerFile } from "../app/load.js";
import { ConfigError, nonEmpty, repeated } from "../options/index.js";
import { curlCommand, type EndpointInit, startPlatform } from "../platform/index.js";
import { openaiBaseUrl } from "../toolkit/deploy/mapping.js";
import { chatCurlCommand, type DevApp, describeApp, lbCurlCommand } from "../toolkit/dev/app.js";
import {
  closeOnSignal,
  consoleUrl,
  LOCAL_PLATFORM_OPTIONS,
  localPlatform,
} from "../toolkit/dev/local-platform.js";
import {
  MAX_WATCH_PATTERNS,
  serverFiles,
  type WatchPattern,
  watchEndpoints,
  watchPatterns,
} from "../toolkit/dev/watch.js";
import { type CommandSpec, parseCommandArgs } from "./options.js";

export const spec = {
  name: "dev",
  args: "[files...]",
  summary:
    "the local platform on 127.0.0.1:8000 with workers running each handler file, restarted when its code changes",
  options: {
    ...LOCAL_PLATFORM_OPTIONS,
    workers: {
      flags: ["--workers"],
      env: ["FLASH_WORKERS"],
      parse: workerRange,
      value: "MIN,MAX",
      help: "workers per endpoint; N means 0,N (env FLASH_WORKERS; default: the Endpoint's workers, else 1,3)",
    },
    watch: repeated(
      ["--watch"],
      nonEmpty,
      "PATH|GLOB",
      `a file, folder or glob (models/*.py, conf/**) whose change restarts every endpoint's workers; repeatable, at most ${MAX_WATCH_PATTERNS}`,
    ),
  },
} satisfies CommandSpec;

/** "min,max", or "n" for [0, n]: what `workers: n` means on an Endpoint. */
function workerRange(raw: string, source: string): [number, number] {
  const match = /^\s*(\d+)\s*(?:,\s*(\d+)\s*)?$/.exec(raw);
  const min = match?.[2] === undefined ? 0 : Number(match?.[1]);
  const max = Number(match?.[2] ?? match?.[1]);
  if (!match || min > max || max < 1 || max > 64) {
    throw new ConfigError(
      `Invalid workers "${raw}" in ${source}: expected "min,max" with 0 <= min <= max, 1 <= max <= 64`,
    );
  }
  return [min, max];
}

/** Workers for a plain handler(), which declares none: one kept warm, so the first job starts at once. */
const DEV_WORKERS: [number, number] = [1, 3];

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

interface DevEndpoint {
  file: string;
  id: string;
  app: DevApp;
  endpoint: EndpointInit & { id: string; file: string };
}

/** `flash dev <handler file ...>`: the local platform plus workers for each file (one endpoint each), restarted when it changes. */
export async function run(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseCommandArgs<typeof spec.options>>;
  let files: string[];
  let patterns: WatchPattern[];
  try {
    parsed = parseCommandArgs(spec, args);
    patterns = watchPatterns(parsed.options.watch, process.cwd());
    files =
      parsed.positional.length > 0
        ? parsed.positional.map((f) => findHandlerFile(f))
        : [findHandlerFile(undefined)];
  } catch (err) {
    process.stderr.write(`flash dev: ${(err as Error).message}\n`);
    return 1;
  }
  const { options } = parsed;
  const { settings, log, keyGenerated } = await localPlatform(options);
  const used = new Set<string>();
  const apps: DevEndpoint[] = [];
  for (const file of files) {
    let app: DevApp;
    try {
      app = await describeApp(file);
    } catch (err) {
      process.stderr.write(
        `flash dev: ${relative(process.cwd(), file) || file}: ${(err as Error).message}\n`,
      );
      return 1;
    }
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
      workers: options.workers ?? app.workers ?? DEV_WORKERS,
      cwd: process.cwd(),
      executionTimeoutMs: app.executionTimeoutMs,
      openaiCompatible: app.openaiCompatible,
      openapi: app.openapi,
      checkInput: app.checkInput,
      routes: app.loadBalanced ? app.routes : undefined,
      // RUNPOD_INIT_TIMEOUT, when set, bounds every worker's start; else a model server's own limit does.
      initTimeoutMs: options.initTimeout === undefined ? app.startLimitMs : undefined,
    };
    apps.push({ file, id, app, endpoint });
  }
  const platform = await startPlatform({
    ...settings,
    // An app with routes is a load-balanced endpoint: its workers serve HTTP behind /lb/<id>/.
    endpoints: apps.filter((a) => !a.app.loadBalanced).map((a) => a.endpoint),
    loadBalanced: apps.filter((a) => a.app.loadBalanced).map((a) => a.endpoint),
  });
  const stopWatching = watchEndpoints(
    apps.map((a) => ({
      id: a.id,
      file: a.file,
      // The files its model server's command names (`python3 server.py`): the server runs them from here.
      files: a.app.server ? serverFiles(a.app.server, process.cwd()) : [],
      restart: () => {
        platform.pool(a.id)?.restartAll();
        platform.lb.get(a.id)?.restartAll();
      },
    })),
    log.child({ subject: "dev" }),
    patterns,
  );
  const tryLine = (a: DevEndpoint) =>
    a.app.loadBalanced
      ? lbCurlCommand(platform.url, a.id, platform.apiKey, a.file, a.app.routes)
      : a.app.openaiCompatible
        ? chatCurlCommand(platform.url, a.id, platform.apiKey, a.file)
        : curlCommand(platform, a.id, sampleBody(a.file));
  process.stdout.write(
    [
      ...apps.map((a) =>
        a.app.loadBalanced
          ? `flash dev: ${relative(process.cwd(), a.file)} is load-balanced endpoint "${a.id}" at ${platform.url}/lb/${a.id}`
          : `flash dev: ${relative(process.cwd(), a.file)} is endpoint "${a.id}" at ${platform.url}/v2/${a.id}${a.app.openaiCompatible ? ` (OpenAI base URL: ${openaiBaseUrl(`${platform.url}/v2/${a.id}`)})` : ""}`,
      ),
      `API key: ${platform.apiKey}${keyGenerated ? " (generated; pass --api-key to choose one)" : ""}`,
      `Console: ${consoleUrl(platform)}`,
      ...apps.slice(1).map((a) => `Also: ${tryLine(a)}`),
      `Ready. Try: ${tryLine(apps[0]!)}`,
      "",
    ].join("\n"),
  );
  await closeOnSignal(platform, log.child({ subject: "dev" }), stopWatching);
  return 0;
}
