// Queue worker: jobs/s, per-job overhead, start-up and idle memory, each beside a baseline from the same run.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { OtlpReceiver } from "../trace/receiver.js";
import { BenchPlatform, percentile, pinApart, spawnNode, stopChild } from "./bench-platform.js";
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
  /** The worker process's CPU (all its threads) per job, ms. */
  cpuMsPerJob: number;
  /** RSS once the jobs are done. */
  rssMb: number;
}

/** CPU time the process has used, in ms (utime + stime of /proc/<pid>/stat, in 10 ms ticks). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Medians of each figure over several runs. */
function medians(runs: Throughput[]): Throughput {
  const m = (f: (t: Throughput) => number) => percentile(runs.map(f), 50);
  return {
    jobsPerSecond: m((t) => t.jobsPerSecond),
    p50: m((t) => t.p50),
    p99: m((t) => t.p99),
    cpuMsPerJob: m((t) => t.cpuMsPerJob),
    rssMb: m((t) => t.rssMb),
  };
}

async function throughput(
  args: string[],
  concurrency: number,
  jobs: number,
  cpus?: string,
  node?: string,
): Promise<Throughput> {
  const platform = await new BenchPlatform().start();
  const child = spawnNode(
    args,
    { ...platform.env(), BENCH_CONCURRENCY: String(concurrency), LOG_LEVEL: "INFO" },
    { cpus, node },
  );
  try {
    await platform.serve(200); // warm-up: JIT, connections
    const cpuBefore = cpuMs(child.pid!);
    const ms = await platform.serve(jobs);
    return {
      jobsPerSecond: (jobs / ms) * 1000,
      p50: percentile(platform.roundTrips, 50),
      p99: percentile(platform.roundTrips, 99),
      cpuMsPerJob: (cpuMs(child.pid!) - cpuBefore) / jobs,
      rssMb: rssMb(child.pid!),
    };
  } finally {
    await stopChild(child);
    await platform.close();
  }
}

/** ms from spawning the process to its first job-take arriving; median of several runs. */
export async function startup(
  args: string[],
  cpus: string | undefined,
  runs = 7,
  env: Record<string, string> = {},
): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const platform = await new BenchPlatform().start();
    const spawned = performance.now();
    const child = spawnNode(args, { ...platform.env(), ...env }, { cpus });
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

/** Three rounds, the processes taking turns; medians of each figure, one per process. */
async function rounds<const P extends readonly string[][]>(
  processes: P,
  concurrency: number,
  jobs: number,
  cpus: string | undefined,
  node?: string,
): Promise<{ [K in keyof P]: Throughput }> {
  const runs: Throughput[][] = processes.map(() => []);
  for (let round = 0; round < 3; round++) {
    for (const [i, args] of processes.entries()) {
      runs[i]!.push(await throughput(args, concurrency, jobs, cpus, node));
    }
  }
  return runs.map(medians) as { [K in keyof P]: Throughput };
}

/** RSS once started and waiting for work (first take + 2 s), then again 2 s after 500 jobs. */
export async function idleRss(
  args: string[],
  node?: string,
  env: Record<string, string> = {},
): Promise<{ started: number; afterJobs: number }> {
  const platform = await new BenchPlatform().start();
  const child = spawnNode(args, { ...platform.env(), ...env }, { ...(node ? { node } : {}) });
  try {
    while (platform.firstTakeAt === undefined) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 2000));
    const started = rssMb(child.pid!);
    await platform.serve(500);
    await new Promise((r) => setTimeout(r, 2000));
    return { started, afterJobs: rssMb(child.pid!) };
  } finally {
    await stopChild(child);
    await platform.close();
  }
}

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT set loads the OpenTelemetry SDK (the default never does): its start and idle cost
 * beside the default worker's, exporting to a real OTLP/HTTP receiver.
 */
export async function tracingRows(
  worker: string[],
  cpus: string | undefined,
  off: { start: number; rss: number },
): Promise<BenchRow[]> {
  const receiver = await new OtlpReceiver().start();
  try {
    const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url };
    const start = await startup(worker, cpus, 7, traced);
    const rss = await idleRss(worker, undefined, traced);
    return [
      {
        suite: "queue worker",
        name: "process start → first job-take, tracing on (OTLP endpoint set, SDK loaded)",
        value: start,
        unit: "ms",
        baseline: { name: "tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)", value: off.start },
        target: "<= off + 60 ms",
        ok: start <= off.start + 60,
      },
      {
        suite: "queue worker",
        name: "idle RSS, tracing on (OTLP endpoint set, SDK loaded)",
        value: rss.started,
        unit: "MB",
        baseline: { name: "tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)", value: off.rss },
        target: "<= off + 15 MB",
        ok: rss.started <= off.rss + 15,
      },
    ];
  } finally {
    await receiver.close();
  }
}

/** runpod-python's worker idle, measured elsewhere (issue 18): it cannot be installed here. */
const RUNPOD_PYTHON_IDLE_MB = 86;
/** What the images' entrypoint starts node with (docker/entrypoint.sh). */
const IMAGE_NODE_FLAGS = ["--max-semi-space-size=4"];

const bench = async (): Promise<BenchRow[]> => {
  // The worker on its own CPU(s), the platform on the first: contention would flatter the ratios.
  const pin = pinApart();
  try {
    return await measure(pin.worker);
  } finally {
    pin.release();
  }
};

async function measure(cpus: string | undefined): Promise<BenchRow[]> {
  const worker = [FLASH, "start", fixture("noop.mjs")];
  const bare = [fixture("bare-loop.mjs")];
  const bareHttp = [fixture("bare-http-loop.mjs")];
  const rows: BenchRow[] = [];
  const pinned = cpus ? `, worker pinned to CPU ${cpus}` : "";
  for (const [concurrency, jobs] of [
    [1, 5000],
    [32, 10_000],
  ] as const) {
    const [base, baseHttp, ours] = await rounds([bare, bareHttp, worker], concurrency, jobs, cpus);
    const ratio = ours.jobsPerSecond / base.jobsPerSecond;
    const lanes = concurrency === 1 ? "" : ", 32 lanes";
    const bareName = `bare fetch loop${lanes}`;
    const httpName = `bare node:http loop${lanes}`;
    rows.push({
      suite: "queue worker",
      name: `no-op jobs/s, concurrency ${concurrency}${pinned} (medians of 3)`,
      value: ours.jobsPerSecond,
      unit: "jobs/s",
      baseline: { name: bareName, value: base.jobsPerSecond },
      target: ">= 0.85× bare loop",
      ok: ratio >= 0.85,
    });
    rows.push({
      suite: "queue worker",
      name: `worker CPU per job (all threads), concurrency ${concurrency}`,
      value: ours.cpuMsPerJob,
      unit: "ms",
      baseline: { name: bareName, value: base.cpuMsPerJob },
      target: "<= bare / 0.85",
      ok: ours.cpuMsPerJob <= base.cpuMsPerJob / 0.85,
    });
    rows.push({
      suite: "queue worker",
      name: `no-op jobs/s, concurrency ${concurrency}, beside a loop on the worker's own transport`,
      value: ours.jobsPerSecond,
      unit: "jobs/s",
      baseline: { name: httpName, value: baseHttp.jobsPerSecond },
    });
    rows.push({
      suite: "queue worker",
      name: `worker CPU per job, concurrency ${concurrency}, beside a loop on the worker's own transport`,
      value: ours.cpuMsPerJob,
      unit: "ms",
      baseline: { name: httpName, value: baseHttp.cpuMsPerJob },
    });
    rows.push({
      suite: "queue worker",
      name: `take→done p50, concurrency ${concurrency}`,
      value: ours.p50,
      unit: "ms",
      baseline: { name: bareName, value: base.p50 },
      target: concurrency === 1 ? "overhead (p50 − bare p50) < 1 ms" : undefined,
      ok: concurrency === 1 ? ours.p50 - base.p50 < 1 : undefined,
    });
    rows.push({
      suite: "queue worker",
      name: `take→done p99, concurrency ${concurrency}`,
      value: ours.p99,
      unit: "ms",
      baseline: { name: bareName, value: base.p99 },
    });
    if (concurrency === 1) {
      rows.push({
        suite: "queue worker",
        name: `RSS after ${jobs + 200} no-op jobs, concurrency 1`,
        value: ours.rssMb,
        unit: "MB",
        baseline: { name: bareName, value: base.rssMb },
        target: "<= 1.1× bare loop",
        ok: ours.rssMb <= 1.1 * base.rssMb,
      });
    }
  }
  const bareStart = await startup(bare, cpus);
  const jsStart = await startup(worker, cpus);
  const tsStart = await startup([FLASH, "start", fixture("noop.ts")], cpus);
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
    name: `process start → first job-take (handler.ts via ${(process.features as { typescript?: unknown }).typescript ? "Node's type stripping" : "esbuild, cached"}, Node ${process.versions.node})`,
    value: tsStart,
    unit: "ms",
    baseline: { name: "the same handler as .mjs", value: jsStart },
    target: "<= 1.3× .mjs",
    ok: tsStart <= 1.3 * jsStart,
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
    name: "idle RSS, started and waiting for work (worker + heartbeat thread)",
    value: ourRss.started,
    unit: "MB",
    baseline: { name: "bare fetch loop", value: bareRss.started },
    target: "<= 65 MB",
    ok: ourRss.started <= 65,
  });
  rows.push({
    suite: "queue worker",
    name: "idle RSS after 500 jobs",
    value: ourRss.afterJobs,
    unit: "MB",
    baseline: { name: "bare fetch loop", value: bareRss.afterJobs },
    target: "<= 1.1× bare loop",
    ok: ourRss.afterJobs <= 1.1 * bareRss.afterJobs,
  });
  // LOG_FORMAT=json loads pino (the default never does): its cost, beside the default worker's.
  const json = { LOG_FORMAT: "json" };
  const jsonStart = await startup(worker, cpus, 7, json);
  rows.push({
    suite: "queue worker",
    name: "process start → first job-take, LOG_FORMAT=json (pino loaded)",
    value: jsonStart,
    unit: "ms",
    baseline: { name: "default text logs", value: jsStart },
    target: "<= default + 30 ms",
    ok: jsonStart <= jsStart + 30,
  });
  const jsonRss = await idleRss(worker, undefined, json);
  rows.push({
    suite: "queue worker",
    name: "idle RSS, LOG_FORMAT=json (pino loaded)",
    value: jsonRss.started,
    unit: "MB",
    baseline: { name: "default text logs", value: ourRss.started },
    target: "<= default + 10 MB",
    ok: jsonRss.started <= ourRss.started + 10,
  });
  rows.push(...(await tracingRows(worker, cpus, { start: jsStart, rss: ourRss.started })));
  // The images' Node (CI names it in FLASH_TEST_NODES), started as the entrypoint starts it.
  for (const node of (process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean)) {
    const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
    for (const [concurrency, jobs] of [
      [1, 5000],
      [32, 10_000],
    ] as const) {
      const [base, ours] = await rounds([bare, worker], concurrency, jobs, cpus, node);
      const lanes = concurrency === 1 ? "" : ", 32 lanes";
      rows.push({
        suite: "queue worker",
        name: `Node ${version}: no-op jobs/s, concurrency ${concurrency}${pinned} (medians of 3)`,
        value: ours.jobsPerSecond,
        unit: "jobs/s",
        baseline: { name: `bare fetch loop${lanes}, Node ${version}`, value: base.jobsPerSecond },
        target: ">= 0.85× bare loop",
        ok: ours.jobsPerSecond >= 0.85 * base.jobsPerSecond,
      });
      rows.push({
        suite: "queue worker",
        name: `Node ${version}: worker CPU per job (all threads), concurrency ${concurrency}`,
        value: ours.cpuMsPerJob,
        unit: "ms",
        baseline: { name: `bare fetch loop${lanes}, Node ${version}`, value: base.cpuMsPerJob },
        target: "<= bare / 0.85",
        ok: ours.cpuMsPerJob <= base.cpuMsPerJob / 0.85,
      });
    }
    const theirs = await idleRss(bare, node);
    const image = await idleRss([...IMAGE_NODE_FLAGS, ...worker], node);
    rows.push({
      suite: "queue worker",
      name: `idle RSS on Node ${version} with the entrypoint's ${IMAGE_NODE_FLAGS.join(" ")}, started and waiting`,
      value: image.started,
      unit: "MB",
      baseline: { name: `bare fetch loop, Node ${version}`, value: theirs.started },
      target: `<= runpod-python's ${RUNPOD_PYTHON_IDLE_MB} MB (measured elsewhere)`,
      ok: image.started <= RUNPOD_PYTHON_IDLE_MB,
    });
    rows.push({
      suite: "queue worker",
      name: `idle RSS on Node ${version} with the entrypoint's ${IMAGE_NODE_FLAGS.join(" ")}, after 500 jobs`,
      value: image.afterJobs,
      unit: "MB",
      baseline: { name: `bare fetch loop, Node ${version}`, value: theirs.afterJobs },
    });
  }
  return rows;
}

export default bench;
