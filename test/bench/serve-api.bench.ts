// --rp_serve_api: /runsync requests/s from 50 clients under wrk, in-process worker beside the loopback worker, same run.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { BenchRow } from "./report.js";
import { type Figures, fixture, load, median, window } from "./wrk.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** The setting: 50 concurrent /runsync clients. */
const CONNECTIONS = 50;
const WARMUP_MS = 2000;
/** The two servers take turns in short windows (A B B A ...), so other load on the machine lands on both alike. */
const WINDOW_MS = 2000;
const PAIRS = 4;
/**
 * Issue 18, measured elsewhere (runpod-python cannot be installed here): runpod-python 1.12's --rp_serve_api
 * answered 3,668 req/s where our loopback worker answered 842 (concurrency 1) and 1,536 (32). Reaching
 * runpod-python is therefore this many times the loopback worker, a ratio this run can check on any machine.
 */
const RUNPOD_PYTHON_RPS = 3668;
const LOOPBACK_RPS_THEN: Record<number, number> = { 1: 842, 32: 1536 };

interface Server {
  child: ChildProcess;
  url: string;
}

/** `flash start serve-echo.mjs --rp_serve_api` with the handler's concurrency; `loopback` puts its worker on the wire. */
function startServer(concurrency: number, loopback: boolean): Promise<Server> {
  const args = [FLASH, "start", fixture("serve-echo.mjs"), "--rp_serve_api", "--rp_api_port", "0"];
  const child = spawn(
    process.execPath,
    [...args, "--api-key", "bench", ...(loopback ? ["--serve-api-loopback"] : [])],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "/tmp",
        BENCH_CONCURRENCY: String(concurrency),
        LOG_LEVEL: "INFO",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  child.stderr?.resume();
  return new Promise((resolve, reject) => {
    let seen = "";
    child.once("exit", (code) => reject(new Error(`server exited with ${code}: ${seen}`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const base = /Local API server for this handler at (http:\S+)/.exec(seen)?.[1];
      if (base && /Worker \S+ started/.test(seen)) {
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume();
        resolve({ child, url: `${base}/runsync` });
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}

const measure = (server: Server) =>
  window(server.child.pid!, server.url, "runsync-echo.lua", CONNECTIONS, WINDOW_MS);

async function compare(concurrency: number): Promise<BenchRow[]> {
  const before = await startServer(concurrency, true);
  const after = await startServer(concurrency, false);
  const runs = { before: [] as Figures[], after: [] as Figures[] };
  try {
    await load(before.url, "runsync-echo.lua", CONNECTIONS, WARMUP_MS);
    await load(after.url, "runsync-echo.lua", CONNECTIONS, WARMUP_MS);
    for (let pair = 0; pair < PAIRS; pair++) {
      const order = pair % 2 === 0 ? (["before", "after"] as const) : (["after", "before"] as const);
      for (const key of order) runs[key].push(await measure(key === "before" ? before : after));
    }
  } finally {
    await stop(before.child);
    await stop(after.child);
  }
  const rps = (figures: Figures[]) => median(figures.map((f) => f.requestsPerSecond));
  const cpu = (figures: Figures[]) => median(figures.map((f) => f.cpuMicrosPerRequest));
  const generator = median(runs.after.map((f) => f.generatorCpu));
  const needed = RUNPOD_PYTHON_RPS / LOOPBACK_RPS_THEN[concurrency]!;
  const ratio = median(runs.after.map((f, i) => f.requestsPerSecond / runs.before[i]!.requestsPerSecond));
  return [
    {
      suite: "serve-api",
      name: `--rp_serve_api /runsync requests/s, ${CONNECTIONS} clients, handler concurrency ${concurrency} (in-process worker; median pair ratio ${ratio.toFixed(2)})`,
      value: rps(runs.after),
      unit: "req/s",
      baseline: { name: "worker over loopback (--serve-api-loopback)", value: rps(runs.before) },
      target: `>= ${needed.toFixed(2)}× loopback: runpod-python's ${RUNPOD_PYTHON_RPS} req/s ÷ loopback's ${LOOPBACK_RPS_THEN[concurrency]}, both measured elsewhere`,
      ok: ratio >= needed,
    },
    {
      suite: "serve-api",
      name: `server CPU per /runsync job, handler concurrency ${concurrency}`,
      value: cpu(runs.after),
      unit: "µs",
      baseline: { name: "worker over loopback", value: cpu(runs.before) },
    },
    {
      suite: "serve-api",
      name: `load generator (wrk, 1 thread) CPU share, handler concurrency ${concurrency}`,
      value: 100 * generator,
      unit: "% of a core",
      target: "< 90 %: the generator is not the bottleneck",
      ok: generator < 0.9,
    },
  ];
}

const bench = async (): Promise<BenchRow[]> => [...(await compare(1)), ...(await compare(32))];

export default bench;
