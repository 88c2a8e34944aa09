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
const WARMUP_MS = 1000;
const MEASURE_MS = 3000;
/** Each server is measured this many times, alternating, and its best run kept: other load on a shared machine hits both alike. */
const ROUNDS = 5;

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

async function measure(args: string[]): Promise<Figures> {
  const server = await startServer(args);
  try {
    await load(server.port, WARMUP_MS);
    const cpuBefore = cpuMicros(server.child.pid!);
    const start = performance.now();
    const { requests, errors } = await load(server.port, MEASURE_MS);
    const seconds = (performance.now() - start) / 1000;
    const cpu = cpuMicros(server.child.pid!) - cpuBefore;
    if (errors > 0) throw new Error(`${errors} request(s) failed against ${args.join(" ")}`);
    return { requestsPerSecond: requests / seconds, cpuMicrosPerRequest: cpu / requests };
  } finally {
    await stop(server.child);
  }
}

const bench = async (): Promise<BenchRow[]> => {
  const bare = [fixture("bare-fastify.mjs")];
  const ours = [FLASH, "start", fixture("routes-echo.mjs")];
  const best = { bare: { rps: 0, cpu: Infinity }, ours: { rps: 0, cpu: Infinity } };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [key, args] of [
      ["bare", bare],
      ["ours", ours],
    ] as const) {
      const figures = await measure(args);
      best[key].rps = Math.max(best[key].rps, figures.requestsPerSecond);
      best[key].cpu = Math.min(best[key].cpu, figures.cpuMicrosPerRequest);
    }
  }
  const ratio = best.ours.rps / best.bare.rps;
  return [
    {
      suite: "load-balanced",
      name: `POST /echo requests/s, ${CONNECTIONS} keep-alive connections`,
      value: best.ours.rps,
      unit: "req/s",
      baseline: { name: "bare fastify, same route", value: best.bare.rps },
      target: ">= 0.9× bare fastify",
      ok: ratio >= 0.9,
    },
    {
      suite: "load-balanced",
      name: "server CPU per request, POST /echo",
      value: best.ours.cpu,
      unit: "µs",
      baseline: { name: "bare fastify, same route", value: best.bare.cpu },
    },
  ];
};

export default bench;
