// Load-balanced mode: requests/s of a trivial POST route through `flash start`, beside bare fastify, same run.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
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
const WINDOW_MS = 1000;
const PAIRS = 12;

const BODY = JSON.stringify({ prompt: "hello", n: 1 });

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

/**
 * A small HTTP/1.1 load generator on raw sockets (cheaper than an HTTP client, so the server is what is
 * measured): each connection sends the next request when the previous response is complete.
 */
function load(port: number, ms: number): Promise<{ requests: number; errors: number }> {
  const request = Buffer.from(
    `POST /echo HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(BODY)}\r\n\r\n${BODY}`,
  );
  let requests = 0;
  let errors = 0;
  let running = true;
  const lanes = Array.from(
    { length: CONNECTIONS },
    () =>
      new Promise<void>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.setNoDelay(true);
        let buffer: Buffer = Buffer.alloc(0);
        socket.on("connect", () => socket.write(request));
        socket.on("data", (chunk: Buffer) => {
          buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
          for (;;) {
            const end = buffer.indexOf("\r\n\r\n");
            if (end < 0) return;
            const head = buffer.subarray(0, end).toString("latin1");
            const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? "0");
            if (buffer.length < end + 4 + length) return;
            if (head.startsWith("HTTP/1.1 200")) requests++;
            else errors++;
            buffer = buffer.subarray(end + 4 + length);
            if (!running) {
              socket.end();
              return;
            }
            socket.write(request);
          }
        });
        socket.on("close", () => resolve());
        socket.on("error", () => {
          errors++;
          resolve();
        });
      }),
  );
  return new Promise((resolve) => {
    setTimeout(async () => {
      running = false;
      await Promise.all(lanes);
      resolve({ requests, errors });
    }, ms);
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
}

async function window(server: Server): Promise<Figures> {
  const cpuBefore = cpuMicros(server.child.pid!);
  const start = performance.now();
  const { requests, errors } = await load(server.port, WINDOW_MS);
  const seconds = (performance.now() - start) / 1000;
  const cpu = cpuMicros(server.child.pid!) - cpuBefore;
  if (errors > 0) throw new Error(`${errors} request(s) failed`);
  return { requestsPerSecond: requests / seconds, cpuMicrosPerRequest: cpu / requests };
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
  ];
};

export default bench;
