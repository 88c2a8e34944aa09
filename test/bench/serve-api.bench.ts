// --rp_serve_api: /runsync requests/s from 50 clients under wrk, beside a stand-in for runpod-python's and the
// loopback worker, all three taking turns in the same run.
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort } from "../process.js";
import { startUntil, stopChild } from "./bench-platform.js";
import type { BenchRow } from "./report.js";
import { type Figures, fixture, load, median, window } from "./wrk.js";

const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** The setting: 50 concurrent /runsync clients. */
const CONNECTIONS = 50;
const WARMUP_MS = 2000;
/** The three servers take turns in short windows (A B C, C B A, ...), so other load on the machine lands on all alike. */
const WINDOW_MS = 2000;
const ROUNDS = 4;
/**
 * Issue 18 measured runpod-python 1.12's --rp_serve_api at 3,668 req/s where it could be installed. It cannot be
 * here (no PyPI), so fixtures/runpod-serve-api.py re-creates its /runsync steps on Debian's FastAPI
 * and uvicorn: the baseline, in the same run (python3 from Debian, where scripts/test-deps.sh installs them).
 */
const PYTHON = "/usr/bin/python3";

interface Server {
  child: ChildProcess;
  url: string;
}

/** `flash start serve-echo.mjs --rp_serve_api` with the handler's concurrency; `loopback` puts its worker on the wire. */
async function startServer(concurrency: number, loopback: boolean): Promise<Server> {
  const args = [FLASH, "start", fixture("serve-echo.mjs"), "--rp_serve_api", "--rp_api_port", "0"];
  const { child, found } = await startUntil(
    process.execPath,
    [...args, "--api-key", "bench", ...(loopback ? ["--serve-api-loopback"] : [])],
    { BENCH_CONCURRENCY: String(concurrency), LOG_LEVEL: "INFO" },
    (seen) => {
      const base = /Local API server for this handler at (http:\S+)/.exec(seen)?.[1];
      return base && /Worker \S+ started/.test(seen) ? base : undefined;
    },
  );
  return { child, url: `${found}/runsync` };
}

/** The runpod-python stand-in, started once and shared by both handler concurrencies (runpod-python ignores it). */
async function startStandIn(): Promise<Server> {
  // uvicorn prints the port it was given, not the one it got: a free one is chosen here.
  const port = await freePort();
  const { child } = await startUntil(
    PYTHON,
    [fixture("runpod-serve-api.py"), String(port)],
    undefined,
    (seen) => (/Uvicorn running on/.test(seen) ? true : undefined),
  );
  return { child, url: `http://127.0.0.1:${port}/runsync` };
}

const measure = (server: Server) =>
  window(server.child.pid!, server.url, "runsync-echo.lua", CONNECTIONS, WINDOW_MS);

async function compare(concurrency: number, standIn: Server): Promise<BenchRow[]> {
  const loopback = await startServer(concurrency, true);
  const ours = await startServer(concurrency, false);
  const servers = { standIn, loopback, ours };
  const runs = { standIn: [] as Figures[], loopback: [] as Figures[], ours: [] as Figures[] };
  const keys = ["standIn", "loopback", "ours"] as const;
  try {
    for (const key of keys) await load(servers[key].url, "runsync-echo.lua", CONNECTIONS, WARMUP_MS);
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in another order, so load from elsewhere on the machine lands on all three alike.
      const order = round % 2 === 0 ? keys : ([...keys].reverse() as (typeof keys)[number][]);
      for (const key of order) runs[key].push(await measure(servers[key]));
    }
  } finally {
    await stopChild(loopback.child);
    await stopChild(ours.child);
  }
  const rps = (figures: Figures[]) => median(figures.map((f) => f.requestsPerSecond));
  const cpu = (figures: Figures[]) => median(figures.map((f) => f.cpuMicrosPerRequest));
  const pairRatio = (than: Figures[]) =>
    median(runs.ours.map((f, i) => f.requestsPerSecond / than[i]!.requestsPerSecond));
  const versusPython = pairRatio(runs.standIn);
  const generator = median(runs.ours.map((f) => f.generatorCpu));
  return [
    {
      suite: "serve-api",
      name: `--rp_serve_api /runsync requests/s, ${CONNECTIONS} clients, handler concurrency ${concurrency} (in-process worker; median round ratio ${versusPython.toFixed(2)})`,
      value: rps(runs.ours),
      unit: "req/s",
      baseline: {
        name: "runpod-python stand-in (FastAPI + uvicorn, fixtures/runpod-serve-api.py)",
        value: rps(runs.standIn),
      },
      target: ">= 1× runpod-python's",
      ok: versusPython >= 1,
    },
    {
      suite: "serve-api",
      name: `--rp_serve_api /runsync requests/s, handler concurrency ${concurrency}, beside the worker on the wire (median round ratio ${pairRatio(runs.loopback).toFixed(2)})`,
      value: rps(runs.ours),
      unit: "req/s",
      baseline: { name: "worker over loopback (--serve-api-loopback)", value: rps(runs.loopback) },
    },
    {
      suite: "serve-api",
      name: `server CPU per /runsync job, handler concurrency ${concurrency}`,
      value: cpu(runs.ours),
      unit: "µs",
      baseline: { name: "runpod-python stand-in", value: cpu(runs.standIn) },
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

const bench = async (): Promise<BenchRow[]> => {
  const standIn = await startStandIn();
  try {
    return [...(await compare(1, standIn)), ...(await compare(32, standIn))];
  } finally {
    await stopChild(standIn.child);
  }
};

export default bench;
