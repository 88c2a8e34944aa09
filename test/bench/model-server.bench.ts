// Model servers: the load-balanced proxy's requests/s under wrk against the same server called directly, and the
// first-token latency a streamed chat adds through the proxy and through the queue passthrough (flash dev).
import type { ChildProcess } from "node:child_process";
import { request } from "node:http";
import { fileURLToPath } from "node:url";
import { percentile, startUntil } from "./bench-platform.js";
import type { BenchRow } from "./report.js";
import { type Figures, fixture, load, median, window } from "./wrk.js";

const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const CONNECTIONS = 32;
const WINDOW_MS = 2000;
const PAIRS = 5;
/** Sequential streamed requests per first-token figure. */
const STREAMS = 300;
const CHAT = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true });

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
          first === undefined ? reject(new Error(`no body from ${url}`)) : resolve(first),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(CHAT);
  });
}

/** p50 of STREAMS first-token times for each URL, taken in turns so other load on the machine hits all alike. */
async function firstTokens(targets: Record<string, { url: string; headers?: Record<string, string> }>) {
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  for (let i = 0; i < STREAMS; i++) {
    for (const [key, { url, headers }] of Object.entries(targets))
      times[key]!.push(await firstToken(url, headers));
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, percentile(v, 50)]));
}

/** SIGTERM, so the runtime stops its model server's process group too; resolves when it exited. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

interface Throughput {
  ratio: number;
  proxied: Figures[];
  direct: Figures[];
  tokens?: Record<string, number>;
}

/** wrk windows in turns against the server directly and through the proxy of `flash start`; first tokens too. */
async function throughput(
  upstream: "node" | "fastapi",
  port: number,
  withTokens: boolean,
): Promise<Throughput> {
  const env = {
    FLASH_LB_HOST: "127.0.0.1",
    LOG_LEVEL: "INFO",
    UPSTREAM_PORT: String(port),
    UPSTREAM: upstream,
  };
  const lb = await startUntil(
    process.execPath,
    [FLASH, "start", fixture("model-server-proxy.mjs")],
    { ...env, PORT: "0" },
    (seen) =>
      /Endpoint bench-proxy ready/.test(seen)
        ? {
            port: Number(/listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen)?.[1]),
            // The runtime logs its server's pid: that process's CPU is what a direct call costs.
            upstreamPid: Number(/Starting model server 'upstream' \(pid (\d+)\)/.exec(seen)?.[1]),
          }
        : undefined,
  );
  const direct = `http://127.0.0.1:${port}`;
  const proxied = `http://127.0.0.1:${lb.found.port}`;
  const { upstreamPid } = lb.found;
  const runs = { direct: [] as Figures[], proxied: [] as Figures[] };
  const ratios: number[] = [];
  try {
    await load(`${direct}/echo`, "post-echo.lua", CONNECTIONS, WINDOW_MS);
    await load(`${proxied}/echo`, "post-echo.lua", CONNECTIONS, WINDOW_MS);
    for (let pair = 0; pair < PAIRS; pair++) {
      const order = pair % 2 === 0 ? (["direct", "proxied"] as const) : (["proxied", "direct"] as const);
      const got: Partial<Record<"direct" | "proxied", Figures>> = {};
      for (const key of order) {
        // The CPU counted is the proxy's (flash start) or the server's, whichever is called.
        const pid = key === "direct" ? upstreamPid : lb.child.pid!;
        got[key] = await window(
          pid,
          `${key === "direct" ? direct : proxied}/echo`,
          "post-echo.lua",
          CONNECTIONS,
          WINDOW_MS,
        );
      }
      runs.direct.push(got.direct!);
      runs.proxied.push(got.proxied!);
      ratios.push(got.proxied!.requestsPerSecond / got.direct!.requestsPerSecond);
    }
    const tokens = withTokens
      ? await firstTokens({
          direct: { url: `${direct}/v1/chat/completions` },
          proxied: { url: `${proxied}/v1/chat/completions` },
        })
      : undefined;
    return { ratio: median(ratios), ...runs, ...(tokens ? { tokens } : {}) };
  } finally {
    await stop(lb.child);
  }
}

const bench = async (): Promise<BenchRow[]> => {
  const upstreamPort = 18_480 + (process.pid % 100) * 3;
  const env = { FLASH_LB_HOST: "127.0.0.1", LOG_LEVEL: "INFO", UPSTREAM_PORT: String(upstreamPort) };
  const bare = await throughput("node", upstreamPort, true);
  const python = await throughput("fastapi", upstreamPort + 2, false);
  const tokens = bare.tokens!;
  // The queue passthrough: flash dev, its worker, the same upstream (a port of its own).
  const queueEnv = { ...env, UPSTREAM_PORT: String(upstreamPort + 1) };
  const dev = await startUntil(
    process.execPath,
    [
      FLASH,
      "dev",
      fixture("model-server-queue.mjs"),
      "--port",
      "0",
      "--api-key",
      "bench",
      "--workers",
      "1,1",
    ],
    queueEnv,
    (seen) =>
      /Model server 'upstream' is ready/.test(seen)
        ? /(http:\/\/127\.0\.0\.1:\d+\/v2\/[\w-]+)/.exec(seen)?.[1]
        : undefined,
  );
  let queue: Record<string, number>;
  try {
    queue = await firstTokens({
      direct: { url: `http://127.0.0.1:${upstreamPort + 1}/v1/chat/completions` },
      queue: { url: `${dev.found}/openai/v1/chat/completions`, headers: { authorization: "Bearer bench" } },
    });
  } finally {
    await stop(dev.child);
  }
  const rps = (figures: Figures[]) => median(figures.map((f) => f.requestsPerSecond));
  const cpu = (figures: Figures[]) => median(figures.map((f) => f.cpuMicrosPerRequest));
  const proxyRow = (what: string, run: Throughput): BenchRow => ({
    suite: "model server",
    name: `load-balanced proxy to ${what}, POST /echo requests/s, ${CONNECTIONS} connections (median pair ratio ${run.ratio.toFixed(2)})`,
    value: rps(run.proxied),
    unit: "req/s",
    baseline: { name: "the same server called directly", value: rps(run.direct) },
    target: ">= 0.9× direct",
    ok: run.ratio >= 0.9,
  });
  return [
    proxyRow("a node:http server doing no work", bare),
    proxyRow("the FastAPI + uvicorn fixture", python),
    {
      suite: "model server",
      name: "CPU per proxied request (flash start: server and client side of the hop)",
      value: cpu(bare.proxied),
      unit: "µs",
      baseline: { name: "the no-work server's own CPU per direct request", value: cpu(bare.direct) },
    },
    {
      suite: "model server",
      name: `first token of a streamed chat through the load-balanced proxy, p50 of ${STREAMS}`,
      value: tokens.proxied!,
      unit: "ms",
      baseline: { name: "the server directly", value: tokens.direct! },
      target: "< 2 ms added",
      ok: tokens.proxied! - tokens.direct! < 2,
    },
    {
      suite: "model server",
      name: `first token of a streamed chat through flash dev's /openai/v1 and the queue passthrough, p50 of ${STREAMS}`,
      value: queue.queue!,
      unit: "ms",
      baseline: { name: "the server directly", value: queue.direct! },
      target: "< 2 ms added",
      ok: queue.queue! - queue.direct! < 2,
    },
  ];
};

export default bench;
