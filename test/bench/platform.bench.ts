// Local platform: jobs/s through it with real workers, and its take→done cost beside a bare fastify server.
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import Fastify from "fastify";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { BenchPlatform, spawnNode, stopChild } from "./bench-platform.js";
import type { BenchRow } from "./report.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const FLASH = fileURLToPath(new URL("../../dist/cli/main.js", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const EP = "bench";
const SUITE = "local platform";

/** The platform as flash dev runs it, logging at INFO, with the lines thrown away instead of printed. */
function quietPlatform(workers: number): Promise<Platform> {
  return startPlatform({
    apiKey: "K",
    logger: createLogger({ level: "INFO", json: false, destination: { write: () => true } }),
    endpoints: [
      {
        id: EP,
        command: [process.execPath, FLASH, "start", fixture("noop.mjs")],
        cwd: ROOT,
        workers: [workers, workers],
        env: { BENCH_CONCURRENCY: "1", LOG_LEVEL: "WARN" },
      },
    ],
  });
}

/** Submits `count` jobs through /run with 16 clients at a time; resolves once all are COMPLETED. */
async function runJobs(platform: Platform, count: number): Promise<number> {
  let finished = 0;
  let resolveAll: () => void = () => {};
  const all = new Promise<void>((r) => {
    resolveAll = r;
  });
  const off = platform.scheduler.onTerminal(() => {
    if (++finished === count) resolveAll();
  });
  const started = performance.now();
  let submitted = 0;
  const client = async () => {
    while (submitted < count) {
      submitted++;
      const res = await fetch(`${platform.url}/v2/${EP}/run`, {
        method: "POST",
        headers: { authorization: "Bearer K", "content-type": "application/json" },
        body: '{"input":{}}',
      });
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 16 }, client));
  await all;
  off();
  return performance.now() - started;
}

async function platformJobsPerSecond(workers: number, jobs: number): Promise<number> {
  const platform = await quietPlatform(workers);
  try {
    await runJobs(platform, 200 * workers); // warm-up: workers started, JIT, connections
    return (jobs / (await runJobs(platform, jobs))) * 1000;
  } finally {
    await platform.close();
  }
}

/** The same no-op worker against the recording server of the queue worker benchmark. */
async function recordingServerJobsPerSecond(jobs: number): Promise<number> {
  const server = await new BenchPlatform().start();
  const child = spawnNode([FLASH, "start", fixture("noop.mjs")], {
    LOG_LEVEL: "WARN",
    ...server.env(),
    BENCH_CONCURRENCY: "1",
  });
  try {
    await server.serve(200);
    return (jobs / (await server.serve(jobs))) * 1000;
  } finally {
    await stopChild(child);
    await server.close();
  }
}

/** The ceiling for a take→done loop: a fastify server that answers job-take with a job and job-done with {}. */
async function bareFastify(): Promise<{
  env: Record<string, string>;
  done: () => number;
  close(): Promise<void>;
}> {
  const app = Fastify({ logger: false });
  let next = 0;
  let doneCount = 0;
  app.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, (_req, body, cb) =>
    cb(null, JSON.parse(String(body))),
  );
  app.get("/v2/:ep/job-take/:worker", async () => ({ id: `j${next++}`, input: {} }));
  app.post("/v2/:ep/job-done/:worker/:job", async () => {
    doneCount++;
    return {};
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v2/EP`;
  return {
    env: {
      RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_POD_ID: "loop",
      RUNPOD_AI_API_KEY: "K",
      // The fitness network check dials this server, never the internet.
      RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
      RUNPOD_NETWORK_CHECK_PORT: String((app.server.address() as AddressInfo).port),
    },
    done: () => doneCount,
    close: () => app.close(),
  };
}

/** jobs/s of the bare take→done fetch loop (fixtures/bare-loop.mjs) over `seconds`, after a warm-up. */
async function loopJobsPerSecond(
  env: Record<string, string>,
  done: () => number,
  seconds: number,
): Promise<number> {
  const child = spawnNode([fixture("bare-loop.mjs")], { LOG_LEVEL: "WARN", ...env });
  try {
    const warm = done() + 300;
    while (done() < warm) await new Promise((r) => setTimeout(r, 10));
    const from = done();
    const started = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    return ((done() - from) / (performance.now() - started)) * 1000;
  } finally {
    await stopChild(child);
  }
}

async function platformLoopJobsPerSecond(seconds: number): Promise<number> {
  const platform = await startPlatform({
    apiKey: "K",
    logger: createLogger({ level: "INFO", json: false, destination: { write: () => true } }),
    endpoints: [{ id: EP }],
  });
  try {
    const endpoint = platform.scheduler.endpoint(EP)!;
    // Keep the queue full from inside, so only take and done cross the wire.
    const refill = setInterval(() => {
      while (endpoint.queue.size < 1000) platform.scheduler.submit(endpoint, { input: {}, sync: false });
    }, 5);
    try {
      return await loopJobsPerSecond(
        platform.workerEnv(EP, "loop"),
        () => endpoint.counters.completed,
        seconds,
      );
    } finally {
      clearInterval(refill);
    }
  } finally {
    await platform.close();
  }
}

const bench = async (): Promise<BenchRow[]> => {
  const rows: BenchRow[] = [];

  const ceiling = await bareFastify();
  let bare: number;
  try {
    bare = await loopJobsPerSecond(ceiling.env, ceiling.done, 3);
  } finally {
    await ceiling.close();
  }
  const loop = await platformLoopJobsPerSecond(3);
  rows.push({
    suite: SUITE,
    name: "take→done fetch loop, jobs/s",
    value: loop,
    unit: "jobs/s",
    baseline: { name: "same loop vs bare fastify", value: bare },
    target: ">= 0.5× bare fastify",
    ok: loop / bare >= 0.5,
  });

  const recording = await recordingServerJobsPerSecond(2000);
  const one = await platformJobsPerSecond(1, 2000);
  const four = await platformJobsPerSecond(4, 4000);
  rows.push({
    suite: SUITE,
    name: "no-op jobs/s, 1 worker (/run → COMPLETED)",
    value: one,
    unit: "jobs/s",
    baseline: { name: "same worker vs recording server", value: recording },
  });
  rows.push({
    suite: SUITE,
    name: "no-op jobs/s, 4 workers (/run → COMPLETED)",
    value: four,
    unit: "jobs/s",
    baseline: { name: "1 worker", value: one },
  });
  const overhead = 1000 / one - 1000 / recording;
  rows.push({
    suite: SUITE,
    name: "platform overhead per job, 1 worker",
    value: overhead,
    unit: "ms",
    baseline: { name: "recording server, per job", value: 1000 / recording },
    // The platform answers three requests per job (run, take, done); the recording server two bare ones.
    target: "< 2 ms",
    ok: overhead < 2,
  });
  return rows;
};

export default bench;
