// Load-balanced mode: requests/s of a trivial POST route through `flash start`, beside bare fastify, same run, under wrk.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { BenchRow } from "./report.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

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

function startServer(args: string[]): Promise<Server> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      PORT: "0",
      FLASH_LB_HOST: "127.0.0.1",
      LOG_LEVEL: "INFO",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stderr?.resume();
  return new Promise((resolve, reject) => {
    let seen = "";
    child.once("exit", (code) => reject(new Error(`server exited with ${code}: ${seen}`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(seen)?.[1];
      const ready = args.length === 1 || /ready/.test(seen);
      if (port && ready) {
        child.stdout?.removeAllListeners("data");
        child.stdout?.resume();
        resolve({ child, port: Number(port) });
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

/** CPU seconds (user + system) on a line of bash's `times`, e.g. "0m0.412s 0m0.301s". */
const cpuSeconds = (line: string): number =>
  [...line.matchAll(/(\d+)m([\d.]+)s/g)].reduce((sum, m) => sum + Number(m[1]) * 60 + Number(m[2]), 0);

interface Load {
  requests: number;
  errors: number;
  /** Seconds wrk itself measured the load for. */
  seconds: number;
  /** wrk's CPU seconds per second of load: well under 1 (its one thread) means it had room to send more. */
  generatorCpu: number;
}

/**
 * Debian's wrk (C, one thread, CONNECTIONS keep-alive connections): a generator much cheaper per request
 * than the servers, so they are what is measured; its own CPU share is reported to show it had room.
 */
function load(port: number, ms: number): Promise<Load> {
  const seconds = Math.max(1, Math.round(ms / 1000));
  const script = fixture("post-echo.lua");
  const command = `wrk -t1 -c${CONNECTIONS} -d${seconds}s -s ${script} http://127.0.0.1:${port}/echo; times`;
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    child.stderr.on("data", (chunk: Buffer) => {
      err += chunk.toString("utf8");
    });
    child.once("error", reject);
    child.once("exit", (code) => {
      const total = /(\d+) requests in ([\d.]+)(ms|s)/.exec(out);
      if (code !== 0 || !total) {
        reject(new Error(`wrk failed (exit ${code}; is wrk installed? scripts/test-deps.sh): ${out}${err}`));
        return;
      }
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? "0");
      const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
      const measured = Number(total[2]) / (total[3] === "ms" ? 1000 : 1);
      // `times` prints the shell's own times, then its children's: the last line is wrk's.
      const wrkCpu = cpuSeconds(out.trim().split("\n").at(-1) ?? "");
      resolve({
        requests: Number(total[1]) - non2xx,
        errors: non2xx + socketErrors,
        seconds: measured,
        generatorCpu: wrkCpu / measured,
      });
    });
  });
}

/** CPU time the process has used, in µs (utime + stime of /proc/<pid>/stat, in 10 ms ticks). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

interface Figures {
  requestsPerSecond: number;
  /** Server CPU per request: steadier than req/s when other work shares the machine. */
  cpuMicrosPerRequest: number;
  /** wrk's CPU seconds per second of load. */
  generatorCpu: number;
}

async function window(server: Server): Promise<Figures> {
  const cpuBefore = cpuMicros(server.child.pid!);
  const { requests, errors, seconds, generatorCpu } = await load(server.port, WINDOW_MS);
  const cpu = cpuMicros(server.child.pid!) - cpuBefore;
  if (errors > 0) throw new Error(`${errors} request(s) failed`);
  return { requestsPerSecond: requests / seconds, cpuMicrosPerRequest: cpu / requests, generatorCpu };
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const bench = async (): Promise<BenchRow[]> => {
  const bare = await startServer([fixture("bare-fastify.mjs")]);
  const ours = await startServer([FLASH, "start", fixture("routes-echo.mjs")]);
  const runs = { bare: [] as Figures[], ours: [] as Figures[] };
  const ratios: number[] = [];
  try {
    await load(bare.port, WARMUP_MS);
    await load(ours.port, WARMUP_MS);
    for (let pair = 0; pair < PAIRS; pair++) {
      // Alternate which goes first, so neither always follows the other.
      const order = pair % 2 === 0 ? (["bare", "ours"] as const) : (["ours", "bare"] as const);
      const got: Partial<Record<"bare" | "ours", Figures>> = {};
      for (const key of order) got[key] = await window(key === "bare" ? bare : ours);
      runs.bare.push(got.bare!);
      runs.ours.push(got.ours!);
      ratios.push(got.ours!.requestsPerSecond / got.bare!.requestsPerSecond);
    }
  } finally {
    await stop(bare.child);
    await stop(ours.child);
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
      target: ">= 0.9× bare fastify",
      ok: ratio >= 0.9,
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
};

export default bench;
