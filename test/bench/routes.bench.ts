// Load-balanced mode: requests/s of a trivial POST route through `flash start`, beside bare fastify, same run, under wrk.
import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pinApart, startUntil, stopChild } from "./bench-platform.js";
import type { BenchRow } from "./report.js";
import { type Figures, fixture, load, median, window } from "./wrk.js";

const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));

/** Keep-alive connections the load generator keeps busy; enough to saturate one server process. */
const CONNECTIONS = 32;
const WARMUP_MS = 2000;
/**
 * Both servers stay up and take turns: many short windows, A then B then B then A..., so load from other
 * work on a shared machine lands on both alike; each figure is the median of its windows.
 */
const WINDOW_MS = 2000;
const PAIRS = 6;

interface Server {
  child: ChildProcess;
  port: number;
}

/** A server on `cpus` (taskset) when given, apart from wrk and this process; resolves once it listens (and is ready). */
async function startServer(args: string[], cpus: string | undefined): Promise<Server> {
  const [command, argv] = cpus
    ? ["taskset", ["-c", cpus, process.execPath, ...args]]
    : [process.execPath, args];
  const { child, found } = await startUntil(
    command,
    argv,
    { PORT: "0", FLASH_LB_HOST: "127.0.0.1", LOG_LEVEL: "INFO" },
    (seen) => {
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen)?.[1];
      const ready = args.length === 1 || /ready/.test(seen);
      return port && ready ? Number(port) : undefined;
    },
  );
  return { child, port: found };
}

const echo = (server: Server) => `http://127.0.0.1:${server.port}/echo`;
const measure = (server: Server, ms: number) =>
  window(server.child.pid!, echo(server), "post-echo.lua", CONNECTIONS, ms);

const bench = async (): Promise<BenchRow[]> => {
  // The servers on their own CPU(s), wrk (a child of this process) on the first, as the queue-worker suite pins.
  const pin = pinApart();
  try {
    return await measureRoutes(pin.worker);
  } finally {
    pin.release();
  }
};

async function measureRoutes(cpus: string | undefined): Promise<BenchRow[]> {
  const bare = await startServer([fixture("bare-fastify.mjs")], cpus);
  const ours = await startServer([FLASH, "start", fixture("routes-echo.mjs")], cpus);
  const runs = { bare: [] as Figures[], ours: [] as Figures[] };
  const ratios: number[] = [];
  try {
    await load(echo(bare), "post-echo.lua", CONNECTIONS, WARMUP_MS);
    await load(echo(ours), "post-echo.lua", CONNECTIONS, WARMUP_MS);
    for (let pair = 0; pair < PAIRS; pair++) {
      // Alternate which goes first, so neither always follows the other.
      const order = pair % 2 === 0 ? (["bare", "ours"] as const) : (["ours", "bare"] as const);
      const got: Partial<Record<"bare" | "ours", Figures>> = {};
      for (const key of order) got[key] = await measure(key === "bare" ? bare : ours, WINDOW_MS);
      runs.bare.push(got.bare!);
      runs.ours.push(got.ours!);
      ratios.push(got.ours!.requestsPerSecond / got.bare!.requestsPerSecond);
    }
  } finally {
    await stopChild(bare.child);
    await stopChild(ours.child);
  }
  const rps = (figures: Figures[]) => median(figures.map((f) => f.requestsPerSecond));
  const cpu = (figures: Figures[]) => median(figures.map((f) => f.cpuMicrosPerRequest));
  const ratio = median(ratios);
  return [
    {
      suite: "load-balanced",
      name: `POST /echo requests/s, ${CONNECTIONS} keep-alive connections (median pair ratio ${ratio.toFixed(2)})`,
      value: rps(runs.ours),
      unit: "req/s",
      baseline: { name: "bare fastify, same route", value: rps(runs.bare) },
      target: ">= 0.95× bare fastify (issue 29; 0.9× in issue 18)",
      ok: ratio >= 0.95,
    },
    {
      suite: "load-balanced",
      name: "server CPU per request, POST /echo",
      value: cpu(runs.ours),
      unit: "µs",
      baseline: { name: "bare fastify, same route", value: cpu(runs.bare) },
    },
    {
      suite: "load-balanced",
      name: "load generator (wrk, 1 thread) CPU share while loading flash start",
      value: 100 * median(runs.ours.map((f) => f.generatorCpu)),
      unit: "% of a core",
      baseline: {
        name: "while loading bare fastify",
        value: 100 * median(runs.bare.map((f) => f.generatorCpu)),
      },
      target: "< 90 %: the generator is not the bottleneck",
      ok: median(runs.ours.map((f) => f.generatorCpu)) < 0.9,
    },
  ];
}

export default bench;
