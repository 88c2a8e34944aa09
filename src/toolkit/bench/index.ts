// `flash bench`'s run: the load, a look at the workers every second while it runs and until they settle, the
// platform's own counters before and after, and from these the report: throughput, latency split into the
// platform's delayTime and executionTime, failures by kind, cold starts, workers over time and cost.
import { type CatalogPrice, type GpuCost, gpuCost, pickGpus } from "./cost.js";
import { generateLoad, type LoadMode, type LoadProgress, type Shot } from "./load.js";
import { type HistogramBin, histogram, type LatencySummary, summarize } from "./stats.js";
import type { BenchClient, BenchTarget, PlatformCounters, WorkerSeen } from "./target.js";

export interface BenchOptions {
  client: BenchClient;
  target: BenchTarget;
  /** The job body sent each time: `{"input": ...}` as JSON. */
  body: string;
  /** A load-balanced endpoint's request, sent instead of a job. */
  route?: { method: string; path: string; body?: string } | undefined;
  /** Send the input's `openai_input` to `openai_route` as a streamed OpenAI request instead of a job. */
  stream?: { route: string; body: string } | undefined;
  mode: LoadMode;
  durationMs: number;
  maxRequests: number;
  /** After sending stops, how long answers are waited for before a job counts as unfinished. */
  drainMs: number;
  /** After the last answer, how long to wait for the workers the load started to stop (their idle time is billed). */
  settleMs: number;
  catalog: { from: string; gpus: readonly CatalogPrice[] };
  /** GPUs to price (catalog id, short name or pool); none: the endpoint's own. */
  gpus: readonly string[];
  signal?: AbortSignal;
  onProgress?: ((progress: LoadProgress & { workers: number }) => void) | undefined;
  /** Between two looks at the workers (1 s). */
  sampleMs?: number;
}

export interface WorkersSample {
  /** Seconds since the run began. */
  t: number;
  alive: number;
  ready: number;
  running: number;
}

export interface FailureKind {
  kind: string;
  count: number;
  /** The first one's detail, as the platform or the connection said it. */
  example?: string;
}

export interface BenchReport {
  endpoint: { id: string; name: string; url: string };
  mode: LoadMode;
  /** Seconds requests were being sent, and until the last answer. */
  sendingSeconds: number;
  answeredSeconds: number;
  requests: { sent: number; completed: number; failed: number };
  /** Completed requests per second of sending. */
  throughput: number;
  /** ms: the caller's wait (send → final answer), and the platform's delayTime and executionTime. */
  latency: {
    total: LatencySummary | null;
    delay: LatencySummary | null;
    execution: LatencySummary | null;
    /** Streamed requests: send → first token. */
    firstToken?: LatencySummary | null | undefined;
  };
  /** The callers' waits (send → final answer), in log-spaced bins. */
  histogram: HistogramBin[];
  failures: FailureKind[];
  /** Jobs that were the first of a worker not yet ready when the job was sent (it waited for a new worker); null for streamed requests, which do not name their worker. */
  coldStarts: number | null;
  workers: {
    samples: WorkersSample[];
    max: number;
    /** Worker-seconds of the run: the platform's own count where it has one, else the samples'. */
    seconds: number;
    source: "platform" | "sampled";
    sampledSeconds: number;
    /** Worker processes started during the run (the platform's count). */
    started?: number | undefined;
    /** False when workers were still up when --settle ran out: their later idle time is not counted. */
    settled: boolean;
  };
  /** The platform's counters for the run (the local platform's /metrics), to check the figures against. */
  platform?: PlatformCounters | undefined;
  cost: { catalog: string; executionSeconds: number; gpus: GpuCost[]; note?: string };
  generator: { cpuPercent: number; cpuMs: number; stopped?: string | undefined };
}

export async function runBench(options: BenchOptions): Promise<BenchReport> {
  const { client, target } = options;
  const sampleMs = options.sampleMs ?? 1_000;
  const before = await client.counters(target);
  const readySince = new Map<string, number>();
  const samples: WorkersSample[] = [];
  const t0 = Date.now();
  let latest: WorkerSeen[] = [];
  const look = async () => {
    try {
      latest = await client.workers(target);
    } catch {
      return; // A missed look leaves a gap in the chart, not a failed run.
    }
    const now = Date.now();
    for (const w of latest) if (w.ready && !readySince.has(w.id)) readySince.set(w.id, now);
    samples.push({
      t: (now - t0) / 1000,
      alive: latest.length,
      ready: latest.filter((w) => w.ready).length,
      running: latest.filter((w) => w.running).length,
    });
  };
  await look();
  const atStart = latest.length;
  let looking = false;
  const timer = setInterval(() => {
    if (looking) return;
    looking = true;
    void look().finally(() => {
      looking = false;
    });
  }, sampleMs);
  let load: Awaited<ReturnType<typeof generateLoad>>;
  try {
    const deadline = Date.now() + options.durationMs + options.drainMs;
    load = await generateLoad(
      {
        mode: options.mode,
        durationMs: options.durationMs,
        maxRequests: options.maxRequests,
        signal: options.signal,
      },
      () => {
        const { stream, route } = options;
        if (route) return client.route(target, route);
        return stream
          ? client.openaiStream(target, stream.route, stream.body)
          : client.job(target, options.body, deadline);
      },
      options.onProgress && ((p) => options.onProgress?.({ ...p, workers: latest.length })),
    );
    // The workers the load started stay up for their idle timeout, and that time is billed: wait for them.
    const settleBy = Date.now() + options.settleMs;
    while (Date.now() < settleBy && !options.signal?.aborted && !settled(latest, atStart)) {
      await new Promise((r) => setTimeout(r, sampleMs));
    }
  } finally {
    clearInterval(timer);
  }
  while (looking) await new Promise((r) => setTimeout(r, 20));
  await look();
  const after = await client.counters(target);
  return report(
    options,
    load,
    { samples, readySince, t0, atStart, settled: settled(latest, atStart) },
    before,
    after,
  );
}

/** Back to the workers it had at the start, none busy. */
function settled(workers: readonly WorkerSeen[], atStart: number): boolean {
  return workers.length <= atStart && workers.every((w) => !w.running);
}

function report(
  options: BenchOptions,
  load: Awaited<ReturnType<typeof generateLoad>>,
  seen: {
    samples: WorkersSample[];
    readySince: Map<string, number>;
    t0: number;
    atStart: number;
    settled: boolean;
  },
  before: PlatformCounters | undefined,
  after: PlatformCounters | undefined,
): BenchReport {
  const { shots } = load;
  const completed = shots.filter((s) => s.kind === "COMPLETED");
  const ran = shots.filter((s) => s.executionTime !== undefined);
  const platform = before && after ? difference(before, after) : undefined;
  // Streamed requests carry no executionTime: the platform's own sum stands in where it has one.
  const executionSeconds =
    ran.length === 0 && platform
      ? platform.executionSeconds
      : ran.reduce((sum, s) => sum + (s.executionTime ?? 0), 0) / 1000;
  const sampledSeconds = integrate(seen.samples);
  const counted = platform?.workerSeconds !== undefined;
  const workerSeconds = platform?.workerSeconds ?? sampledSeconds;
  const answeredMs = shots.reduce((max, s) => Math.max(max, s.doneAt), 0);
  return {
    endpoint: { id: options.target.id, name: options.target.name, url: options.target.url },
    mode: options.mode,
    sendingSeconds: load.sendingMs / 1000,
    answeredSeconds: answeredMs / 1000,
    requests: { sent: shots.length, completed: completed.length, failed: shots.length - completed.length },
    throughput: load.sendingMs > 0 ? completed.length / (load.sendingMs / 1000) : 0,
    latency: {
      total: summarize(shots.map((s) => s.doneAt - s.sentAt)),
      delay: summarize(ran.flatMap((s) => (s.delayTime === undefined ? [] : [s.delayTime]))),
      execution: summarize(ran.map((s) => s.executionTime ?? 0)),
      firstToken: options.stream
        ? summarize(shots.flatMap((s) => (s.firstTokenMs === undefined ? [] : [s.firstTokenMs])))
        : undefined,
    },
    histogram: histogram(shots.map((s) => s.doneAt - s.sentAt)),
    failures: failuresByKind(shots),
    coldStarts: options.stream || options.route ? null : coldStarts(shots, load.startedAt, seen.readySince),
    workers: {
      samples: seen.samples,
      max: Math.max(0, ...seen.samples.map((s) => s.alive)),
      seconds: round(workerSeconds, 3),
      source: counted ? "platform" : "sampled",
      sampledSeconds: round(sampledSeconds, 3),
      started: counted ? platform?.workerStarts : undefined,
      settled: seen.settled,
    },
    platform,
    cost: costs(options, { workerSeconds, executionSeconds, completed: completed.length }),
    generator: {
      cpuPercent: load.cpuPercent,
      cpuMs: Math.round(load.cpuMs),
      stopped: load.stopped,
    },
  };
}

function costs(
  options: BenchOptions,
  time: { workerSeconds: number; executionSeconds: number; completed: number },
): BenchReport["cost"] {
  const gpuConfig = options.target.rest?.gpu;
  const names = options.gpus.length > 0 ? options.gpus : (gpuConfig?.pools ?? []);
  const base = { catalog: options.catalog.from, executionSeconds: round(time.executionSeconds, 3) };
  if (names.length === 0)
    return { ...base, gpus: [], note: "no GPU to price: name one with --gpu (a catalog id, name or pool)" };
  const picked = pickGpus(options.catalog.gpus, names);
  const gpus = picked.flatMap((gpu) => gpuCost(gpu, gpuConfig?.count ?? 1, time) ?? []);
  if (gpus.length === 0)
    return {
      ...base,
      gpus,
      note: `the catalog at ${options.catalog.from} has no serverless price for ${names.join(", ")}`,
    };
  return { ...base, gpus };
}

/** Failures by kind, most frequent first, each with its first detail. */
function failuresByKind(shots: readonly Shot[]): FailureKind[] {
  const kinds = new Map<string, FailureKind>();
  for (const shot of shots) {
    if (shot.kind === "COMPLETED") continue;
    const kind = kinds.get(shot.kind) ?? { kind: shot.kind, count: 0 };
    kind.count++;
    if (kind.example === undefined && shot.detail) kind.example = shot.detail;
    kinds.set(shot.kind, kind);
  }
  return [...kinds.values()].sort((a, b) => b.count - a.count);
}

/** Jobs that were their worker's first in this run while that worker was not yet seen ready when they were sent. */
export function coldStarts(
  shots: readonly Shot[],
  startedAt: number,
  readySince: ReadonlyMap<string, number>,
): number {
  const first = new Set<string>();
  let count = 0;
  for (const shot of [...shots].sort((a, b) => a.sentAt - b.sentAt)) {
    if (!shot.workerId || first.has(shot.workerId)) continue;
    first.add(shot.workerId);
    const ready = readySince.get(shot.workerId);
    if (ready === undefined || ready > startedAt + shot.sentAt) count++;
  }
  return count;
}

/** Worker-seconds from the looks: each look's count held until the next. */
export function integrate(samples: readonly WorkersSample[]): number {
  let seconds = 0;
  for (let i = 1; i < samples.length; i++)
    seconds += samples[i - 1]!.alive * (samples[i]!.t - samples[i - 1]!.t);
  return seconds;
}

function difference(before: PlatformCounters, after: PlatformCounters): PlatformCounters {
  const grown = (a: Record<string, number>, b: Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const [key, n] of Object.entries(b)) if (n - (a[key] ?? 0) > 0) out[key] = n - (a[key] ?? 0);
    return out;
  };
  return {
    jobs: grown(before.jobs, after.jobs),
    answers: grown(before.answers, after.answers),
    executionSeconds: round(after.executionSeconds - before.executionSeconds, 3),
    delaySeconds: round(after.delaySeconds - before.delaySeconds, 3),
    workerSeconds:
      after.workerSeconds === undefined
        ? undefined
        : round(after.workerSeconds - (before.workerSeconds ?? 0), 3),
    workerStarts: after.workerStarts - before.workerStarts,
  };
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
