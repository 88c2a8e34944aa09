// Queue worker: jobs/s, per-job overhead, start-up and idle memory, each beside a baseline from the same run.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { BenchPlatform, percentile, spawnNode, stopChild } from "./bench-platform.js";
import type { BenchRow } from "./report.js";

const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

const rssMb = (pid: number) => {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? "0");
  return kb / 1024;
};

interface Throughput {
  jobsPerSecond: number;
  p50: number;
  p99: number;
}

async function throughput(args: string[], concurrency: number, jobs: number): Promise<Throughput> {
  const platform = await new BenchPlatform().start();
  const child = spawnNode(args, {
    ...platform.env(),
    BENCH_CONCURRENCY: String(concurrency),
    LOG_LEVEL: "INFO",
  });
  try {
    await platform.serve(200); // warm-up: JIT, connections
    const ms = await platform.serve(jobs);
    return {
      jobsPerSecond: (jobs / ms) * 1000,
      p50: percentile(platform.roundTrips, 50),
      p99: percentile(platform.roundTrips, 99),
    };
  } finally {
    await stopChild(child);
    await platform.close();
  }
}

/** ms from spawning the process to its first job-take arriving; median of several runs. */
async function startup(args: string[], runs = 7): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const platform = await new BenchPlatform().start();
    const spawned = performance.now();
    const child = spawnNode(args, platform.env());
    while (platform.firstTakeAt === undefined) await new Promise((r) => setTimeout(r, 1));
    times.push(platform.firstTakeAt - spawned);
    await stopChild(child);
    await platform.close();
  }
  return percentile(times, 50);
}

/** The worker's "All fitness checks passed. (N ms)"; median of several starts. */
async function fitnessMs(args: string[], runs = 7): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const platform = await new BenchPlatform().start();
    const child = spawnNode(args, platform.env());
    let out = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    const passed = () => /All fitness checks passed\. \(([\d.]+)ms\)/.exec(out);
    while (!passed() && child.exitCode === null) await new Promise((r) => setTimeout(r, 5));
    times.push(Number(passed()?.[1] ?? Number.NaN));
    await stopChild(child);
    await platform.close();
  }
  return percentile(times, 50);
}

async function idleRss(args: string[]): Promise<number> {
  const platform = await new BenchPlatform().start();
  const child = spawnNode(args, platform.env());
  try {
    await platform.serve(500);
    await new Promise((r) => setTimeout(r, 2000));
    return rssMb(child.pid!);
  } finally {
    await stopChild(child);
    await platform.close();
  }
}

const bench = async (): Promise<BenchRow[]> => {
  const worker = [FLASH, "start", fixture("noop.mjs")];
  const bare = [fixture("bare-loop.mjs")];
  const rows: BenchRow[] = [];
  for (const [concurrency, jobs] of [
    [1, 3000],
    [32, 10_000],
  ] as const) {
    const base = await throughput(bare, concurrency, jobs);
    const ours = await throughput(worker, concurrency, jobs);
    const ratio = ours.jobsPerSecond / base.jobsPerSecond;
    rows.push({
      suite: "queue worker",
      name: `no-op jobs/s, concurrency ${concurrency}`,
      value: ours.jobsPerSecond,
      unit: "jobs/s",
      baseline: { name: "bare fetch loop", value: base.jobsPerSecond },
      target: concurrency === 1 ? ">= 0.6× bare loop" : undefined,
      ok: concurrency === 1 ? ratio >= 0.6 : undefined,
    });
    rows.push({
      suite: "queue worker",
      name: `take→done p50, concurrency ${concurrency}`,
      value: ours.p50,
      unit: "ms",
      baseline: { name: "bare fetch loop", value: base.p50 },
      target: concurrency === 1 ? "overhead (p50 − bare p50) < 1 ms" : undefined,
      ok: concurrency === 1 ? ours.p50 - base.p50 < 1 : undefined,
    });
    rows.push({
      suite: "queue worker",
      name: `take→done p99, concurrency ${concurrency}`,
      value: ours.p99,
      unit: "ms",
      baseline: { name: "bare fetch loop", value: base.p99 },
    });
  }
  const bareStart = await startup(bare);
  const jsStart = await startup(worker);
  const tsStart = await startup([FLASH, "start", fixture("noop.ts")]);
  rows.push({
    suite: "queue worker",
    name: "process start → first job-take (handler.mjs)",
    value: jsStart,
    unit: "ms",
    baseline: { name: "bare fetch loop", value: bareStart },
    target: "< 150 ms",
    ok: jsStart < 150,
  });
  rows.push({
    suite: "queue worker",
    name: `process start → first job-take (handler.ts via ${(process.features as { typescript?: unknown }).typescript ? "Node's type stripping" : "tsx"})`,
    value: tsStart,
    unit: "ms",
    baseline: { name: "bare fetch loop", value: bareStart },
    target: "< 150 ms",
    ok: tsStart < 150,
  });
  // The fitness checks on this CPU host (memory, disk, network to the stand-in platform), as the worker
  // times them itself: a difference of two start-up medians is lost in this machine's noise.
  const checks = await fitnessMs(worker);
  rows.push({
    suite: "queue worker",
    name: "fitness checks before the first job-take (CPU host, worker's own timing)",
    value: checks,
    unit: "ms",
    target: "< 5 ms",
    ok: checks < 5,
  });
  const bareRss = await idleRss(bare);
  const ourRss = await idleRss(worker);
  rows.push({
    suite: "queue worker",
    name: "idle RSS after 500 jobs (worker + heartbeat thread)",
    value: ourRss,
    unit: "MB",
    baseline: { name: "bare fetch loop", value: bareRss },
    target: "< 60 MB",
    ok: ourRss < 60,
  });
  return rows;
};

export default bench;
