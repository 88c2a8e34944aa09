// `flash bench`: load an endpoint (flash dev's, flash serve's or a deployed one) with its test input and report
// throughput, latency split into the platform's delayTime and executionTime, failures by kind, cold starts,
// workers over time and the cost per 1,000 requests from the GPU catalog's serverless price.
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { isFlashError } from "../flash-error.js";
import { nextShutdownSignal } from "../lifecycle.js";
import { ConfigError, integer, nonEmpty, repeated, toggle } from "../options/index.js";
import type { CatalogPrice } from "../toolkit/bench/cost.js";
import { type BenchReport, runBench } from "../toolkit/bench/index.js";
import { BENCH_LIMITS, type LoadMode } from "../toolkit/bench/load.js";
import { formatReport, progressLine } from "../toolkit/bench/report.js";
import { BenchClient, BenchError } from "../toolkit/bench/target.js";
import { toolkitLogger } from "../toolkit/log.js";
import { connectApi } from "../toolkit/rest/connect.js";
import { API_OPTIONS, type CommandSpec, fail, isDeployError, parseCommandArgs } from "./options.js";

/** The largest test input sent as a job (the platform's /runsync takes 20 MB; a bench sends it many times). */
const MAX_INPUT_BYTES = 1024 * 1024;

/** "60s", "90", "2m", "500ms": kept in ms. */
function duration(raw: string, source: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(raw);
  const ms = match
    ? Number(match[1]) * (match[2] === "ms" ? 1 : match[2] === "m" ? 60_000 : 1_000)
    : Number.NaN;
  if (!(ms > 0) || ms > BENCH_LIMITS.durationS * 1000) {
    throw new ConfigError(
      `Invalid duration "${raw}" in ${source}: expected 500ms, 60s or 2m, at most ${BENCH_LIMITS.durationS} s`,
    );
  }
  return ms;
}

/** "20" or "20/s": requests per second. */
function rate(raw: string, source: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(\/s)?\s*$/.exec(raw);
  const value = match ? Number(match[1]) : Number.NaN;
  if (!(value > 0) || value > BENCH_LIMITS.rate) {
    throw new ConfigError(
      `Invalid rate "${raw}" in ${source}: expected requests per second above 0, at most ${BENCH_LIMITS.rate}/s (one generator's limit)`,
    );
  }
  return value;
}

export const spec = {
  name: "bench",
  args: "[ENDPOINT]",
  summary:
    "load a queue endpoint with test_input.json and report throughput, latency (delay vs execution), failures, cold starts, workers and cost per 1,000 requests",
  options: {
    input: {
      flags: ["--input"],
      parse: nonEmpty,
      default: "test_input.json",
      value: "FILE",
      help: 'the job sent each time, {"input": ...} (default test_input.json; at most 1 MB)',
    },
    rate: {
      flags: ["--rate"],
      parse: rate,
      value: "R/s",
      help: `open loop: start R requests per second whatever the answers (at most ${BENCH_LIMITS.rate}/s)`,
    },
    concurrency: {
      flags: ["--concurrency"],
      parse: integer(1, BENCH_LIMITS.concurrency),
      value: "N",
      help: "closed loop: N callers, each sending again once answered (default 1 when no --rate)",
    },
    duration: {
      flags: ["--duration"],
      parse: duration,
      default: 60_000,
      value: "T",
      help: `how long to send: 60s (default), 2m, 500ms; at most ${BENCH_LIMITS.durationS} s`,
    },
    requests: {
      flags: ["--requests"],
      parse: integer(1, BENCH_LIMITS.requests),
      default: BENCH_LIMITS.requests,
      value: "N",
      help: `stop after N requests (at most ${BENCH_LIMITS.requests})`,
    },
    settle: {
      flags: ["--settle"],
      parse: duration,
      default: 60_000,
      value: "T",
      help: "after the last answer, wait this long at most for the workers the load started to stop: their idle time is billed (default 60s)",
    },
    wait: {
      flags: ["--wait"],
      parse: duration,
      default: 120_000,
      value: "T",
      help: "after sending stops, how long to wait for answers before a job counts as unfinished (default 120s)",
    },
    gpu: repeated(
      ["--gpu"],
      nonEmpty,
      "GPU",
      "price on this GPU: a catalog id, name or pool (default: the endpoint's own GPUs); cost per 1,000 = price.serverless × GPUs per worker × worker-seconds (execution + starting + idle) ÷ completed × 1,000",
    ),
    catalog: {
      flags: ["--catalog"],
      parse: nonEmpty,
      value: "FILE",
      help: "the GPU prices: a saved answer of GET /v2/catalog/gpus (default: the API's own catalog)",
    },
    stream: toggle(
      ["--stream"],
      "a model server's endpoint: send the input's openai_input to <endpoint>/openai/v1<openai_route>, streamed, timing the first token",
    ),
    json: toggle(["--json"], "the report as JSON (for CI)"),
    ...API_OPTIONS,
  },
} satisfies CommandSpec;

/** `flash bench [ENDPOINT] [--rate R/s | --concurrency N] [--duration T] [--json]` */
export async function run(args: string[]): Promise<number> {
  const log = toolkitLogger();
  try {
    const { options, positional } = parseCommandArgs(spec, args);
    const [ref, extra] = positional;
    if (extra) throw new ConfigError(`Unexpected argument ${extra}`);
    if (options.rate !== undefined && options.concurrency !== undefined)
      throw new ConfigError("Give --rate or --concurrency, not both");
    const mode: LoadMode =
      options.rate !== undefined
        ? { kind: "rate", perSecond: options.rate }
        : { kind: "concurrency", callers: options.concurrency ?? 1 };
    const input = readInput(options.input);
    const api = connectApi({ apiUrl: options.apiUrl, apiKey: options.apiKey, log });
    const client = new BenchClient(api, api.apiKey);
    const target = await client.resolve(ref, process.cwd());
    if ((target.kind === "queue") !== (input.kind === "job"))
      throw new BenchError(
        target.kind === "queue"
          ? `${target.name} is a queue endpoint: ${options.input} must be a job, {"input": ...}`
          : `${target.name} is load-balanced: ${options.input} must be a request, {"method", "path", "body"} (or {"requests": [...]}, the first one sent)`,
      );
    const body = input.kind === "job" ? input.body : "";
    const stream = options.stream && input.kind === "job" ? openaiRequest(options.input, body) : undefined;
    const route = input.kind === "request" ? input : undefined;
    const wantsPrice = options.gpu.length > 0 || (target.rest?.gpu?.pools.length ?? 0) > 0;
    const catalog = wantsPrice ? await readCatalog(options.catalog, api) : { from: "none needed", gpus: [] };
    const interrupted = nextShutdownSignal();
    const controller = new AbortController();
    void interrupted.signal.then(() => controller.abort());
    const live = process.stderr.isTTY && !options.json;
    let report: BenchReport;
    try {
      report = await runBench({
        client,
        target,
        body,
        stream,
        route,
        mode,
        durationMs: options.duration,
        maxRequests: options.requests,
        drainMs: options.wait,
        settleMs: options.settle,
        catalog,
        gpus: options.gpu,
        signal: controller.signal,
        onProgress: live ? (p) => process.stderr.write(`\r\x1b[2K${progressLine(p)}`) : undefined,
      });
    } finally {
      interrupted.dispose();
      if (live) process.stderr.write("\r\x1b[2K");
    }
    process.stdout.write(`${options.json ? JSON.stringify(report, null, 2) : formatReport(report)}\n`);
    return report.generator.stopped ? 1 : 0;
  } catch (err) {
    if (isDeployError(err) || isFlashError(err, "BENCH_FAILED")) return fail(err.message);
    throw err;
  }
}

type BenchInput =
  | { kind: "job"; body: string }
  | { kind: "request"; method: string; path: string; body?: string };

/** The test input: a job body `{"input": ...}`, or a load-balanced request `{"method", "path", "body"}` (or `requests[0]`). */
function readInput(file: string): BenchInput {
  const path = resolve(file);
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    throw new BenchError(`No test input at ${path}: give --input FILE with {"input": ...}`);
  }
  if (size > MAX_INPUT_BYTES) throw new BenchError(`${file} is ${size} bytes: a bench input is at most 1 MB`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new BenchError(`${file} is not JSON: ${(err as Error).message}`);
  }
  if (typeof parsed === "object" && parsed !== null && "input" in parsed)
    return { kind: "job", body: JSON.stringify({ input: (parsed as { input: unknown }).input }) };
  const requests = (parsed as { requests?: unknown } | null)?.requests;
  const first = (Array.isArray(requests) ? requests[0] : parsed) as
    | { method?: unknown; path?: unknown; body?: unknown }
    | undefined;
  if (typeof first?.path !== "string" || !first.path.startsWith("/"))
    throw new BenchError(
      `${file} is neither a job, {"input": ...}, nor a request, {"method", "path": "/...", "body"}`,
    );
  const method = typeof first.method === "string" ? first.method.toUpperCase() : "GET";
  return {
    kind: "request",
    method,
    path: first.path,
    body: first.body === undefined ? undefined : JSON.stringify(first.body),
  };
}

/** The streamed OpenAI request of a model server's test input: `{"input": {"openai_route", "openai_input"}}`. */
function openaiRequest(file: string, body: string): { route: string; body: string } {
  const input = (JSON.parse(body) as { input: { openai_route?: unknown; openai_input?: unknown } }).input;
  if (
    typeof input?.openai_route !== "string" ||
    typeof input.openai_input !== "object" ||
    !input.openai_input
  )
    throw new BenchError(
      `--stream sends a model server's OpenAI request: ${file} needs {"input": {"openai_route": "/v1/chat/completions", "openai_input": {...}}}`,
    );
  return { route: input.openai_route, body: JSON.stringify({ ...input.openai_input, stream: true }) };
}

/** Prices from a saved catalog answer, else the API's GET /v2/catalog/gpus. */
async function readCatalog(
  file: string | undefined,
  api: ReturnType<typeof connectApi>,
): Promise<{ from: string; gpus: CatalogPrice[] }> {
  if (file) {
    try {
      const parsed = JSON.parse(readFileSync(resolve(file), "utf8")) as { gpus?: unknown } | unknown[];
      const gpus = Array.isArray(parsed) ? parsed : (parsed as { gpus?: unknown }).gpus;
      if (Array.isArray(gpus)) return { from: file, gpus: gpus.map(priced) };
    } catch (err) {
      throw new BenchError(`--catalog ${file} could not be read: ${(err as Error).message}`);
    }
    throw new BenchError(`--catalog ${file} is not an answer of GET /v2/catalog/gpus ({"gpus": [...]})`);
  }
  const gpus = await api.gpuTypes();
  return { from: `${api.url}/v2/catalog/gpus`, gpus: gpus.map(priced) };
}

function priced(entry: unknown): CatalogPrice {
  const e = entry as { id?: unknown; name?: unknown; pool?: unknown; price?: { serverless?: unknown } };
  const serverless = e.price?.serverless;
  return {
    id: String(e.id),
    name: String(e.name ?? e.id),
    pool: typeof e.pool === "string" ? e.pool : null,
    price: typeof serverless === "number" ? { serverless } : {},
  };
}
