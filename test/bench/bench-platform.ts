// A minimal platform for benchmarks: hands out no-op jobs as fast as asked and times each job's round trip.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export class BenchPlatform {
  private server!: Server;
  base = "";
  private remaining = 0;
  private next = 0;
  private handedAt = new Map<string, number>();
  /** ms from a job leaving job-take to its result arriving at job-done. */
  roundTrips: number[] = [];
  firstTakeAt: number | undefined;
  private onDrained: (() => void) | undefined;
  private doneCount = 0;
  private target = 0;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const url = req.url ?? "";
      if (url.includes("/job-take")) {
        this.firstTakeAt ??= performance.now();
        const size = url.includes("/job-take-batch/") ? Number(/batch_size=(\d+)/.exec(url)?.[1] ?? "1") : 1;
        const count = Math.min(size, this.remaining);
        if (count === 0) {
          // Long-poll a little, as the platform does, then 204.
          setTimeout(() => res.writeHead(204).end(), 50);
          return;
        }
        this.remaining -= count;
        const jobs = Array.from({ length: count }, () => ({ id: `j${this.next++}`, input: {} }));
        const now = performance.now();
        for (const j of jobs) this.handedAt.set(j.id, now);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(url.includes("/job-take-batch/") ? jobs : jobs[0]));
        return;
      }
      if (url.includes("/job-done/")) {
        req.resume();
        req.on("end", () => {
          const id = /\/job-done\/[^/]+\/([^?]+)/.exec(url)?.[1] ?? "";
          const handed = this.handedAt.get(id);
          if (handed !== undefined) {
            this.roundTrips.push(performance.now() - handed);
            this.handedAt.delete(id);
          }
          res.writeHead(200, { "content-type": "application/json" }).end("{}");
          if (++this.doneCount >= this.target) this.onDrained?.();
        });
        return;
      }
      if (url.includes("/job-stop/")) {
        setTimeout(() => res.writeHead(204).end(), 1000);
        return;
      }
      req.resume();
      res.writeHead(200).end();
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  env(): Record<string, string> {
    return {
      RUNPOD_WEBHOOK_GET_JOB: `${this.base}/v2/EP/job-take/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${this.base}/v2/EP/job-done/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_STREAM: `${this.base}/v2/EP/job-stream/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_WEBHOOK_PING: `${this.base}/v2/EP/ping/$RUNPOD_POD_ID?gpu=X`,
      RUNPOD_POD_ID: "bench",
      RUNPOD_AI_API_KEY: "K",
      // The fitness network check dials this server, never the internet.
      RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
      RUNPOD_NETWORK_CHECK_PORT: new URL(this.base).port,
    };
  }

  /** Hands out `count` jobs and resolves with the elapsed ms once all their results arrived. */
  async serve(count: number): Promise<number> {
    this.roundTrips = [];
    this.doneCount = 0;
    this.target = count;
    const started = performance.now();
    const drained = new Promise<void>((r) => {
      this.onDrained = r;
    });
    this.remaining = count;
    await drained;
    return performance.now() - started;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

/** The Nodes besides this one to repeat a suite's rows on (`:`-separated paths; CI names the images' Node 24). */
export const otherNodes = (): string[] => (process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean);

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/**
 * A node child in the repository root with a minimal environment; its output is read and dropped. `cpus`
 * (e.g. "1") pins it with taskset, apart from the platform; `node` runs another Node binary.
 */
export function spawnNode(
  args: string[],
  env: Record<string, string>,
  { cpus, node = process.execPath }: { cpus?: string; node?: string } = {},
): ChildProcess {
  const [command, argv] = cpus ? ["taskset", ["-c", cpus, node, ...args]] : [node, args];
  const child = spawn(command, argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return child;
}

/**
 * Pins this process (the bench platform) to the first CPU and hands back the CPUs left for the process under
 * test, or undefined on a one-CPU machine; `release()` undoes the pin.
 */
export function pinApart(): { worker: string | undefined; release(): void } {
  const count = availableParallelism();
  if (count < 2) return { worker: undefined, release() {} };
  execFileSync("taskset", ["-cp", "0", String(process.pid)], { stdio: "ignore" });
  return {
    worker: count === 2 ? "1" : `1-${count - 1}`,
    release: () =>
      execFileSync("taskset", ["-cp", `0-${count - 1}`, String(process.pid)], { stdio: "ignore" }),
  };
}

/**
 * Spawns a server and resolves once `ready` finds what it needs in its output so far (stdout and stderr
 * together); rejects, with that output, if it exits first. Its output is read and dropped afterwards.
 */
export function startUntil<T>(
  command: string,
  args: string[],
  env: Record<string, string> | undefined,
  ready: (output: string) => T | undefined,
): Promise<{ child: ChildProcess; found: T }> {
  const child = spawn(command, args, {
    cwd: ROOT,
    ...(env ? { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env } } : {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise((resolve, reject) => {
    let seen = "";
    child.once("exit", (code) => reject(new Error(`${command} exited with ${code}: ${seen}`)));
    const onData = (chunk: Buffer) => {
      seen += chunk.toString("utf8");
      const found = ready(seen);
      if (found === undefined) return;
      for (const stream of [child.stdout, child.stderr]) {
        stream?.removeListener("data", onData);
        stream?.resume();
      }
      resolve({ child, found });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGKILL");
  await exited;
}
