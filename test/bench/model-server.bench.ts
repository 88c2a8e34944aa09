// Model servers: the load-balanced proxy's requests/s under wrk against the same server called directly, and the
// first-token latency a streamed chat adds through the proxy and through the queue passthrough (flash dev).
// Upstreams: a node:http server doing no work, the FastAPI fixture of the tests (skipped when /usr/bin/python3 lacks
// fastapi or uvicorn), and, with MODEL_SERVER_BENCH_UPSTREAM set, any OpenAI-compatible server that command line
// starts (`{port}` in it is replaced; it runs in the repository root with the bench's environment), e.g.
// test/bench/fixtures/gpu-openai-server.py running a model on a GPU. Its knobs: MODEL_SERVER_BENCH_TOKENS (max_tokens
// of every chat, 16), MODEL_SERVER_BENCH_WINDOW_MS (each wrk window, 3000), MODEL_SERVER_BENCH_STREAMS (first tokens
// per figure, 100 for it, 300 for the others), MODEL_SERVER_BENCH_CONNECTIONS (wrk's, 32),
// MODEL_SERVER_BENCH_START_TIMEOUT (s, 300), MODEL_SERVER_BENCH_ONLY_UPSTREAM=1 (its rows alone),
// MODEL_SERVER_BENCH_ONLY=proxy (the no-work server's relay rows alone, beside its two ceilings) or =passthrough
// (the queue passthrough's first token and its worker share alone).
// MODEL_SERVER_BENCH_COMPARE=<another built checkout> times that build's queue passthrough in the same turns.
import type { ChildProcess } from "node:child_process";
import { execFileSync } from "node:child_process";
import { request } from "node:http";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { percentile, startUntil, stopChild } from "./bench-platform.js";
import { workerShare } from "./passthrough-share.js";
import type { BenchRow } from "./report.js";
import { type CpuOf, type Figures, fixture, load, median, window } from "./wrk.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");
const FLASH = `${ROOT}/dist/cli/main.js`;
/** Another built checkout (e.g. the previous commit's): its queue passthrough is timed in the same turns. */
const COMPARE = process.env.MODEL_SERVER_BENCH_COMPARE?.replace(/\/$/, "");
const CONNECTIONS = Number(process.env.MODEL_SERVER_BENCH_CONNECTIONS ?? 32);
const WINDOW_MS = 2000;
const PAIRS = 5;
/** Sequential streamed requests per first-token figure. */
const STREAMS = Number(process.env.MODEL_SERVER_BENCH_STREAMS ?? 300);
/** Tokens a chat request asks for (max_tokens): what a model server generates per request. */
const TOKENS = Number(process.env.MODEL_SERVER_BENCH_TOKENS ?? 16);
const CHAT = JSON.stringify({
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  max_tokens: TOKENS,
  stream: true,
});
const GOAL_RATIO = 0.9;
const GOAL_ADDED_MS = 2;
/** The relay against the bare pipe proxy: requests/s in every round, and first token added (issue 46, item 4). */
const GOAL_PIPE_RATIO = 0.95;
const GOAL_PIPE_ADDED_MS = 0.3;
/** The passthrough's worker share: rounds of jobs, flash and bare in turns, and its goal over the bare worker. */
const SHARE_ROUNDS = 4;
const SHARE_JOBS = 100;
const GOAL_SHARE_MS = 0.5;
/** MODEL_SERVER_BENCH_ONLY=proxy: the no-work server's relay rows alone (no FastAPI, no queue passthrough). */
const ONLY = process.env.MODEL_SERVER_BENCH_ONLY;

/** Where the benchmark's servers come from: fixtures/model-server-upstream-of.mjs reads UPSTREAM*. */
interface Upstream {
  /** What the rows call it, and the request wrk sends. */
  label: string;
  request: string;
  env: Record<string, string>;
  /** The wrk script and the path it posts to; the load window; wrk's per-request timeout. */
  script: string;
  path: string;
  windowMs: number;
  timeoutS?: number;
  /** Streamed requests per first-token figure. */
  streams: number;
  /** Passed the bench's whole environment (a model server's CUDA, PYTHONPATH…), not only PATH and HOME. */
  inherit: boolean;
}

const NODE: Upstream = {
  label: "a node:http server doing no work",
  request: "POST /echo",
  env: { UPSTREAM: "node" },
  script: "post-echo.lua",
  path: "/echo",
  windowMs: WINDOW_MS,
  streams: STREAMS,
  inherit: false,
};
const FASTAPI: Upstream = { ...NODE, label: "the FastAPI + uvicorn fixture", env: { UPSTREAM: "fastapi" } };

/** MODEL_SERVER_BENCH_UPSTREAM as an upstream, or undefined when it is not set. */
function commandUpstream(): Upstream | undefined {
  const line = process.env.MODEL_SERVER_BENCH_UPSTREAM?.trim();
  if (!line) return undefined;
  if (!line.includes("{port}"))
    throw new Error(`MODEL_SERVER_BENCH_UPSTREAM must contain {port} where the server's port goes: ${line}`);
  const words = line.split(/\s+/);
  const program = basename(words.find((w) => /\.(py|mjs|js)$/.test(w)) ?? words[0]!);
  return {
    label: `${program} (MODEL_SERVER_BENCH_UPSTREAM)`,
    request: `POST /v1/chat/completions of ${TOKENS} tokens`,
    env: {
      UPSTREAM: "command",
      UPSTREAM_COMMAND: line,
      UPSTREAM_START_TIMEOUT: process.env.MODEL_SERVER_BENCH_START_TIMEOUT ?? "300",
      MODEL_SERVER_BENCH_TOKENS: String(TOKENS),
    },
    script: "post-chat.lua",
    path: "/v1/chat/completions",
    windowMs: Number(process.env.MODEL_SERVER_BENCH_WINDOW_MS ?? 3000),
    streams: Number(process.env.MODEL_SERVER_BENCH_STREAMS ?? 100),
    timeoutS: 60,
    inherit: true,
  };
}

/** Whether /usr/bin/python3 (the FastAPI fixture's) has fastapi and uvicorn. */
function hasFastapi(): boolean {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import fastapi, uvicorn"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** The environment of a `flash` child: the upstream's, with its port; the GPU check is not what is measured. */
function flashEnv(upstream: Upstream, port: number): Record<string, string> {
  const env: Record<string, string> = {
    FLASH_LB_HOST: "127.0.0.1",
    LOG_LEVEL: "INFO",
    RUNPOD_SKIP_GPU_CHECK: "true",
    ...upstream.env,
    UPSTREAM_PORT: String(port),
  };
  if (env.UPSTREAM_COMMAND) env.UPSTREAM_COMMAND = env.UPSTREAM_COMMAND.replaceAll("{port}", String(port));
  if (!upstream.inherit) return env;
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined),
  );
  return { ...inherited, ...env };
}

/** ms from sending a streamed chat request to its first body byte. */
function firstToken(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      url,
      { method: "POST", headers: { "content-type": "application/json", ...headers } },
      (res) => {
        let first: number | undefined;
        res.on("data", () => {
          first ??= performance.now() - started;
        });
        res.on("end", () =>
          res.statusCode !== 200
            ? reject(new Error(`${url} answered ${res.statusCode}`))
            : first === undefined
              ? reject(new Error(`no body from ${url}`))
              : resolve(first),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(CHAT);
  });
}

/** p50 of `count` first-token times for each URL, taken in turns so other load on the machine hits all alike. */
async function firstTokens(
  count: number,
  targets: Record<string, { url: string; headers?: Record<string, string> }>,
) {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  for (let i = 0; i < count; i++) {
    for (const [key, { url, headers }] of Object.entries(targets))
      times[key]!.push(await firstToken(url, headers));
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, percentile(v, 50)]));
}

/** SIGTERM, so the runtime stops its model server's process group too; resolves when it exited. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

/** What a window is aimed at: the server itself, the relay of `flash start`, and the relay's two ceilings. */
type Target = "direct" | "proxied" | "pipe" | "undici";

interface Throughput {
  ratio: number;
  proxied: Figures[];
  direct: Figures[];
  /** The ceilings' windows, when measured (the no-work server's run): same rounds, turns rotated. */
  pipe?: Figures[];
  undici?: Figures[];
  tokens?: Record<string, number>;
}

/** A ceiling proxy fixture (bare-pipe-proxy.mjs, undici-proxy.mjs) in front of `port`: its child and URL. */
async function startCeiling(script: string, port: number) {
  const { child, found } = await startUntil(
    process.execPath,
    [fixture(script), String(port)],
    {},
    (seen) => /listening on (\d+)/.exec(seen)?.[1],
  );
  return { child, url: `http://127.0.0.1:${found}` };
}

/** Windows of equal length as one: their mean requests/s, CPU per request over all their requests, wrk's top share. */
function combine(windows: Figures[]): Figures {
  const rate = windows.reduce((sum, f) => sum + f.requestsPerSecond, 0);
  return {
    requestsPerSecond: rate / windows.length,
    cpuMicrosPerRequest:
      windows.reduce((sum, f) => sum + f.cpuMicrosPerRequest * f.requestsPerSecond, 0) / rate,
    generatorCpu: Math.max(...windows.map((f) => f.generatorCpu)),
  };
}

/** Round `round`'s order of the targets: rotated each round and reversed every other, so none always goes first. */
function turns<T>(targets: readonly T[], round: number): T[] {
  const shift = round % targets.length;
  const rotated = [...targets.slice(shift), ...targets.slice(0, shift)];
  return Math.floor(round / targets.length) % 2 ? rotated.reverse() : rotated;
}

/**
 * wrk windows in turns against the server directly and through the relay of `flash start`; with `ceilings`, through
 * a bare node:http pipe proxy and undici's proxying in front of the same server too; first tokens of each.
 */
async function throughput(
  upstream: Upstream,
  port: number,
  withTokens: boolean,
  ceilings = false,
): Promise<Throughput> {
  const lb = await startUntil(
    process.execPath,
    [FLASH, "start", fixture("model-server-proxy.mjs")],
    { ...flashEnv(upstream, port), PORT: "0" },
    (seen) =>
      /Endpoint bench-proxy ready/.test(seen)
        ? {
            port: Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen)?.[1]),
            // The runtime logs the pid of its server's process group: that group's CPU is what a direct call costs.
            upstreamGroup: Number(/Starting model server 'upstream' \(pid (\d+)\)/.exec(seen)?.[1]),
          }
        : undefined,
  );
  const children: ChildProcess[] = [lb.child];
  try {
    const bases: Partial<Record<Target, { url: string; cpu: CpuOf }>> = {
      direct: { url: `http://127.0.0.1:${port}`, cpu: { group: lb.found.upstreamGroup } },
      proxied: { url: `http://127.0.0.1:${lb.found.port}`, cpu: lb.child.pid! },
    };
    if (ceilings) {
      for (const [key, script] of [
        ["pipe", "bare-pipe-proxy.mjs"],
        ["undici", "undici-proxy.mjs"],
      ] as const) {
        const ceiling = await startCeiling(script, port);
        children.push(ceiling.child);
        bases[key] = { url: ceiling.url, cpu: ceiling.child.pid! };
      }
    }
    const targets = Object.keys(bases) as Target[];
    const { script, path, windowMs, timeoutS } = upstream;
    const runs: Partial<Record<Target, Figures[]>> = {};
    for (const key of targets) {
      await load(`${bases[key]!.url}${path}`, script, CONNECTIONS, windowMs, timeoutS);
      runs[key] = [];
    }
    const ratios: number[] = [];
    // A round is its order there and back (A B C D D C B A), each window half the round's share: the host's other
    // load, which drifts over seconds, then falls on every target alike.
    const half = Math.max(1000, windowMs / 2);
    for (let round = 0; round < PAIRS; round++) {
      const got: Partial<Record<Target, Figures[]>> = {};
      const order = turns(targets, round);
      for (const key of [...order, ...order.reverse()]) {
        const { url, cpu } = bases[key]!;
        // The CPU counted is the proxy's (flash start, or the ceiling) or the server's group, whichever is called.
        const figures = await window(cpu, `${url}${path}`, script, CONNECTIONS, half, timeoutS);
        got[key] = [...(got[key] ?? []), figures];
      }
      for (const key of targets) runs[key]!.push(combine(got[key]!));
      ratios.push(runs.proxied!.at(-1)!.requestsPerSecond / runs.direct!.at(-1)!.requestsPerSecond);
    }
    const tokens = withTokens
      ? await firstTokens(
          upstream.streams,
          Object.fromEntries(targets.map((key) => [key, { url: `${bases[key]!.url}/v1/chat/completions` }])),
        )
      : undefined;
    return {
      ratio: median(ratios),
      direct: runs.direct!,
      proxied: runs.proxied!,
      ...(runs.pipe ? { pipe: runs.pipe } : {}),
      ...(runs.undici ? { undici: runs.undici } : {}),
      ...(tokens ? { tokens } : {}),
    };
  } finally {
    await stop(lb.child);
    for (const child of children.slice(1)) await stopChild(child);
  }
}

/** flash dev of the checkout at `root` (built) serving model-server-queue.mjs: its endpoint's URL once its server is ready. */
function startDev(root: string, upstream: Upstream, port: number) {
  return startUntil(
    process.execPath,
    [
      `${root}/dist/cli/main.js`,
      "dev",
      `${root}/test/bench/fixtures/model-server-queue.mjs`,
      "--port",
      "0",
      "--api-key",
      "bench",
      "--workers",
      "1,1",
    ],
    flashEnv(upstream, port),
    (seen) =>
      /Model server 'upstream' is ready/.test(seen)
        ? /(http:\/\/127\.0\.0\.1:\d+\/v2\/[\w-]+)/.exec(seen)?.[1]
        : undefined,
  );
}

/**
 * First tokens through flash dev's /openai/v1 and the queue passthrough, and from its server directly; with
 * `compare` (another built checkout), through that build's flash dev too, in the same turns (key "compare").
 */
async function queueTokens(
  upstream: Upstream,
  port: number,
  compare?: { root: string; port: number },
): Promise<Record<string, number>> {
  const devs: ChildProcess[] = [];
  try {
    const dev = await startDev(ROOT, upstream, port);
    devs.push(dev.child);
    const other = compare ? await startDev(compare.root, upstream, compare.port) : undefined;
    if (other) devs.push(other.child);
    const through = (url: string) => ({
      url: `${url}/openai/v1/chat/completions`,
      headers: { authorization: "Bearer bench" },
    });
    return await firstTokens(upstream.streams, {
      direct: { url: `http://127.0.0.1:${port}/v1/chat/completions` },
      queue: through(dev.found),
      ...(other ? { compare: through(other.found) } : {}),
    });
  } finally {
    for (const child of devs) await stop(child);
  }
}

const rps = (figures: Figures[]) => median(figures.map((f) => f.requestsPerSecond));
const cpu = (figures: Figures[]) => median(figures.map((f) => f.cpuMicrosPerRequest));

function proxyRow(upstream: Upstream, run: Throughput): BenchRow {
  return {
    suite: "model server",
    name: `load-balanced proxy to ${upstream.label}, ${upstream.request} requests/s, ${CONNECTIONS} connections (median pair ratio ${run.ratio.toFixed(2)})`,
    value: rps(run.proxied),
    unit: "req/s",
    baseline: { name: "the same server called directly", value: rps(run.direct) },
    target: `>= ${GOAL_RATIO}× direct`,
    ok: run.ratio >= GOAL_RATIO,
  };
}

function tokenRow(what: string, streams: number, value: number, direct: number): BenchRow {
  return {
    suite: "model server",
    name: `first token of a streamed chat through ${what}, p50 of ${streams}`,
    value,
    unit: "ms",
    baseline: { name: "the server directly", value: direct },
    target: `< ${GOAL_ADDED_MS} ms added`,
    ok: value - direct < GOAL_ADDED_MS,
  };
}

/** Each round's ratio of `a` to `b` (requests/s, windows of the same round). */
const roundRatios = (a: Figures[], b: Figures[]) =>
  a.map((f, i) => f.requestsPerSecond / b[i]!.requestsPerSecond);
const list = (values: number[]) => values.map((v) => v.toFixed(2)).join(" ");

/**
 * The relay against its fair ceilings (issue 46, item 4), same rounds: a bare node:http pipe proxy (goal: >= 0.95×
 * in every round) and undici's proxying; first tokens against the pipe's (goal: <= + 0.3 ms); wrk's own CPU share.
 */
function relayRows(run: Throughput): BenchRow[] {
  const pipe = run.pipe!;
  const undici = run.undici!;
  const tokens = run.tokens!;
  const relay = roundRatios(run.proxied, pipe);
  const viaUndici = roundRatios(undici, pipe);
  const generator = Math.max(...[run.direct, run.proxied, pipe, undici].flat().map((f) => f.generatorCpu));
  const cpuRatios = (a: Figures[]) =>
    list(a.map((f, i) => f.cpuMicrosPerRequest / pipe[i]!.cpuMicrosPerRequest));
  say(
    `relay ÷ bare pipe per round: ${list(relay)} (goal >= ${GOAL_PIPE_RATIO} in each); undici ÷ bare pipe: ${list(viaUndici)}; wrk's CPU share at most ${generator.toFixed(2)}`,
  );
  say(
    `CPU per request ÷ the bare pipe's per round: relay ${cpuRatios(run.proxied)}, undici ${cpuRatios(undici)} (µs: relay ${cpu(run.proxied).toFixed(1)}, pipe ${cpu(pipe).toFixed(1)}, undici ${cpu(undici).toFixed(1)}, the server direct ${cpu(run.direct).toFixed(1)})`,
  );
  say(
    `first token: relay ${tokens.proxied!.toFixed(3)} ms, bare pipe ${tokens.pipe!.toFixed(3)} ms, undici ${tokens.undici!.toFixed(3)} ms, direct ${tokens.direct!.toFixed(3)} ms`,
  );
  return [
    {
      suite: "model server",
      name: `load-balanced relay beside a bare node:http pipe proxy in front of the same no-work server, POST /echo requests/s, ${CONNECTIONS} connections (round ratios ${list(relay)}; wrk's CPU share at most ${generator.toFixed(2)})`,
      value: rps(run.proxied),
      unit: "req/s",
      baseline: { name: "the bare pipe proxy", value: rps(pipe) },
      target: `>= ${GOAL_PIPE_RATIO}× the pipe in every round`,
      ok: Math.min(...relay) >= GOAL_PIPE_RATIO,
    },
    {
      suite: "model server",
      name: `undici's proxying (Pool.stream) in front of the same server, the second ceiling (round ratios ${list(viaUndici)})`,
      value: rps(undici),
      unit: "req/s",
      baseline: { name: "the bare pipe proxy", value: rps(pipe) },
    },
    {
      suite: "model server",
      name: "CPU per request of the bare pipe proxy (server and client side of the hop)",
      value: cpu(pipe),
      unit: "µs",
      baseline: { name: "the relay's (flash start)", value: cpu(run.proxied) },
    },
    {
      suite: "model server",
      name: `first token of a streamed chat through the load-balanced relay, p50 of ${STREAMS}`,
      value: tokens.proxied!,
      unit: "ms",
      baseline: { name: "through the bare pipe proxy", value: tokens.pipe! },
      target: `<= the pipe's + ${GOAL_PIPE_ADDED_MS} ms`,
      ok: tokens.proxied! - tokens.pipe! <= GOAL_PIPE_ADDED_MS,
    },
  ];
}

/**
 * The queue passthrough's worker share (issue 46, item 5; passthrough-share.ts) beside a bare node:http worker in
 * the same turns, and what the local platform's hops add to flash dev's first token besides it.
 */
async function passthroughRows(port: number, queue: Record<string, number>): Promise<BenchRow[]> {
  const share = await workerShare(port, SHARE_ROUNDS, SHARE_JOBS);
  const own = share.flash - share.bare;
  say(
    `queue passthrough, the worker's share: p50 ${share.flash.toFixed(3)} ms, the bare worker's ${share.bare.toFixed(3)} ms (the worker's own ${own.toFixed(3)} ms; goal <= ${GOAL_SHARE_MS}); rounds (flash, bare): ${share.rounds.map(([a, b]) => `${a.toFixed(2)}/${b.toFixed(2)}`).join(" ")}`,
  );
  const hops = queue.queue! - queue.direct! - share.flash;
  say(`the local platform's hops and the job's start in flash dev's first token: ${hops.toFixed(2)} ms`);
  return [
    {
      suite: "model server",
      name: `queue passthrough, the worker's share of a first token: the server's first SSE event written → its stream post at a stand-in platform, both loopback hops in, p50 of ${share.jobs} (rounds flash/bare: ${share.rounds.map(([a, b]) => `${a.toFixed(2)}/${b.toFixed(2)}`).join(" ")})`,
      value: share.flash,
      unit: "ms",
      baseline: { name: "a bare node:http worker, same hops, same turns", value: share.bare },
      target: `<= ${GOAL_SHARE_MS} ms over the bare worker`,
      ok: own <= GOAL_SHARE_MS,
    },
    {
      suite: "model server",
      name: "the local platform's hops (and the job's start, the server's head) in flash dev's /openai/v1 first token: its added ms less the worker's share",
      value: hops,
      unit: "ms",
    },
  ];
}

/** One line on stderr as each part ends, so a run cut short still shows what it measured. */
function say(line: string): void {
  process.stderr.write(`model-server bench: ${line}\n`);
}

const added = (tokens: Record<string, number>, key: string) =>
  `${(tokens[key]! - tokens.direct!).toFixed(2)} ms added (p50 ${tokens[key]!.toFixed(2)} ms vs ${tokens.direct!.toFixed(2)} ms direct; goal < ${GOAL_ADDED_MS} ms)`;

/** The rows of one upstream: proxy throughput and first tokens through the proxy and through the queue. */
async function upstreamRows(upstream: Upstream, port: number): Promise<BenchRow[]> {
  say(`${upstream.label}: load-balanced proxy vs direct…`);
  const run = await throughput(upstream, port, true);
  say(
    `${upstream.label}: proxy/direct ${run.ratio.toFixed(3)}× (${rps(run.proxied).toFixed(1)} vs ${rps(run.direct).toFixed(1)} req/s; goal >= ${GOAL_RATIO}×); first token through the proxy ${added(run.tokens!, "proxied")}`,
  );
  const queue = await queueTokens(upstream, port + 1);
  say(
    `${upstream.label}: first token through flash dev's /openai/v1 queue passthrough ${added(queue, "queue")}`,
  );
  return [
    proxyRow(upstream, run),
    tokenRow(
      `the load-balanced proxy to ${upstream.label}`,
      upstream.streams,
      run.tokens!.proxied!,
      run.tokens!.direct!,
    ),
    tokenRow(
      `flash dev's /openai/v1 and the queue passthrough to ${upstream.label}`,
      upstream.streams,
      queue.queue!,
      queue.direct!,
    ),
  ];
}

const bench = async (): Promise<BenchRow[]> => {
  const upstreamPort = 18_480 + (process.pid % 100) * 8;
  const rows: BenchRow[] = [];
  // A model server named on the command line goes first: on a lent GPU host it is what the run is for.
  const model = commandUpstream();
  if (model) {
    say(`MODEL_SERVER_BENCH_UPSTREAM: ${process.env.MODEL_SERVER_BENCH_UPSTREAM}`);
    try {
      rows.push(...(await upstreamRows(model, upstreamPort + 3)));
    } catch (err) {
      // The other rows still run: the failure is a row of its own, and its message is on stderr.
      const message = err instanceof Error ? err.message : String(err);
      say(`${model.label} FAILED: ${message}`);
      // The server's own last error line (a Python exception), else the message's first line.
      const reason =
        [...message.matchAll(/^\w*(?:Error|Exception)\b.*$/gm)].at(-1)?.[0] ?? message.split("\n")[0]!;
      rows.push({
        suite: "model server",
        name: `${model.label}: failed (${reason.slice(0, 200)}; the log is on stderr)`,
        value: Number.NaN,
        unit: "",
        ok: false,
      });
    }
  }
  if (model && process.env.MODEL_SERVER_BENCH_ONLY_UPSTREAM === "1") return rows;
  if (ONLY === "passthrough") {
    const queue = await queueTokens(NODE, upstreamPort + 1);
    return [...rows, ...(await passthroughRows(upstreamPort + 6, queue))];
  }

  const bare = await throughput(NODE, upstreamPort, true, true);
  say(
    `${NODE.label}: proxy/direct ${bare.ratio.toFixed(3)}×; first token through the proxy ${added(bare.tokens!, "proxied")}`,
  );
  const relay = relayRows(bare);
  if (ONLY === "proxy") return [...rows, proxyRow(NODE, bare), ...relay];
  let python: Throughput | undefined;
  if (hasFastapi()) {
    python = await throughput(FASTAPI, upstreamPort + 2, false);
    say(`${FASTAPI.label}: proxy/direct ${python.ratio.toFixed(3)}×`);
  } else say("/usr/bin/python3 has no fastapi and uvicorn: the FastAPI rows are skipped");
  const compare = COMPARE ? { root: COMPARE, port: upstreamPort + 5 } : undefined;
  const queue = await queueTokens(NODE, upstreamPort + 1, compare);
  say(`${NODE.label}: first token through flash dev's /openai/v1 queue passthrough ${added(queue, "queue")}`);
  if (compare) say(`the same through the build in ${COMPARE}: ${added(queue, "compare")}`);
  const tokens = bare.tokens!;
  return [
    ...rows,
    proxyRow(NODE, bare),
    ...(python ? [proxyRow(FASTAPI, python)] : []),
    {
      suite: "model server",
      name: "CPU per proxied request (flash start: server and client side of the hop)",
      value: cpu(bare.proxied),
      unit: "µs",
      baseline: { name: "the no-work server's own CPU per direct request", value: cpu(bare.direct) },
    },
    ...relay,
    tokenRow("the load-balanced proxy", STREAMS, tokens.proxied!, tokens.direct!),
    tokenRow("flash dev's /openai/v1 and the queue passthrough", STREAMS, queue.queue!, queue.direct!),
    ...(await passthroughRows(upstreamPort + 6, queue)),
    ...(queue.compare === undefined
      ? []
      : [
          tokenRow(
            `flash dev's /openai/v1 and the queue passthrough of the build in MODEL_SERVER_BENCH_COMPARE (${COMPARE}), in the same turns`,
            STREAMS,
            queue.compare,
            queue.direct!,
          ),
        ]),
  ];
};

export default bench;
