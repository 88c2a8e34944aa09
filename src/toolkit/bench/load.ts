// The load generator: an open loop (requests started at a fixed rate, whatever the answers) or a closed one (N
// callers, each sending its next request when its last one is answered), bounded by a duration and a request
// budget. It watches itself: a rate it falls behind on is stopped and reported, with its own CPU use.

/** The most requests per second, callers, requests and seconds one run may ask for (documented in --help). */
export const BENCH_LIMITS = {
  rate: 1_000,
  concurrency: 1_000,
  requests: 100_000,
  durationS: 3_600,
  /** Requests waiting for an answer at once, in the open loop: past this the endpoint is not keeping up. */
  inFlight: 2_000,
  /** How far behind its schedule the open loop may fall before it says it cannot generate the rate. */
  lagMs: 1_000,
};

export type LoadMode = { kind: "rate"; perSecond: number } | { kind: "concurrency"; callers: number };

export interface LoadPlan {
  mode: LoadMode;
  durationMs: number;
  /** Stop after this many requests, even before the duration. */
  maxRequests: number;
  /** Aborted: stop sending (Ctrl-C); requests in flight still get their answers. */
  signal?: AbortSignal;
}

/** What became of one request: its kind is "COMPLETED" or the failure's kind. */
export interface Outcome {
  kind: string;
  /** The platform's own timings, when its answer carried them. */
  delayTime?: number;
  executionTime?: number;
  workerId?: string;
  /** A streamed request: ms from sending to its first token. */
  firstTokenMs?: number;
  /** The first words of why it failed. */
  detail?: string;
}

export interface Shot extends Outcome {
  /** When it was sent and answered, ms since the run began. */
  sentAt: number;
  doneAt: number;
}

export interface LoadProgress {
  elapsedMs: number;
  sent: number;
  done: number;
  failed: number;
  inFlight: number;
}

export interface LoadResult {
  shots: Shot[];
  /** The run's start (Date.now()) and how long sending went on. */
  startedAt: number;
  sendingMs: number;
  /** Why sending stopped before its duration and budget, when it did. */
  stopped?: string | undefined;
  /** The generator's CPU: user+system ms, and as % of one core over the sending time. */
  cpuMs: number;
  cpuPercent: number;
}

/** Sends requests with `send` as the plan says; resolves when every request sent has its outcome. */
export async function generateLoad(
  plan: LoadPlan,
  send: () => Promise<Outcome>,
  onProgress?: (progress: LoadProgress) => void,
): Promise<LoadResult> {
  const startedAt = Date.now();
  const cpuBefore = process.cpuUsage();
  const shots: Shot[] = [];
  const pending = new Set<Promise<void>>();
  let sent = 0;
  let failed = 0;
  let stopped: string | undefined;
  let sendingMs = 0;
  const elapsed = () => Date.now() - startedAt;
  const more = () =>
    !stopped && !plan.signal?.aborted && sent < plan.maxRequests && elapsed() < plan.durationMs;

  const fire = (): Promise<void> => {
    const sentAt = elapsed();
    sent++;
    const done = send().then(
      (outcome) => outcome,
      (err: unknown): Outcome => ({
        kind: "error",
        detail: err instanceof Error ? err.message : String(err),
      }),
    );
    const settled = done.then((outcome) => {
      if (outcome.kind !== "COMPLETED") failed++;
      shots.push({ ...outcome, sentAt, doneAt: elapsed() });
      pending.delete(settled);
    });
    pending.add(settled);
    return settled;
  };

  const progress = onProgress
    ? setInterval(
        () => onProgress({ elapsedMs: elapsed(), sent, done: shots.length, failed, inFlight: pending.size }),
        500,
      )
    : undefined;
  try {
    if (plan.mode.kind === "rate") {
      const interval = 1000 / plan.mode.perSecond;
      while (more()) {
        const due = sent * interval;
        const now = elapsed();
        if (now < due) {
          await new Promise((r) => setTimeout(r, Math.min(due - now, plan.durationMs - now)));
          continue;
        }
        // Behind by more than the lag limit: the generator, not the endpoint, sets the pace now.
        if (now - due > BENCH_LIMITS.lagMs) {
          stopped = `the generator fell ${Math.round(now - due)} ms behind ${plan.mode.perSecond}/s: it cannot generate this rate here (its CPU: ${cpuPercent(cpuBefore, now)} % of one core); lower --rate or use --concurrency`;
          break;
        }
        if (pending.size >= BENCH_LIMITS.inFlight) {
          stopped = `${BENCH_LIMITS.inFlight} requests were waiting for answers at once: the endpoint does not keep up with ${plan.mode.perSecond}/s; lower --rate or use --concurrency`;
          break;
        }
        void fire();
      }
    } else {
      const caller = async () => {
        while (more()) await fire();
      };
      await Promise.all(Array.from({ length: plan.mode.callers }, caller));
    }
    sendingMs = elapsed();
    while (pending.size > 0) await Promise.race(pending);
  } finally {
    clearInterval(progress);
  }
  const cpu = process.cpuUsage(cpuBefore);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  shots.sort((a, b) => a.sentAt - b.sentAt);
  return {
    shots,
    startedAt,
    sendingMs,
    stopped,
    cpuMs,
    cpuPercent: Math.round((cpuMs / Math.max(1, elapsed())) * 1000) / 10,
  };
}

function cpuPercent(before: NodeJS.CpuUsage, elapsedMs: number): number {
  const cpu = process.cpuUsage(before);
  return Math.round(((cpu.user + cpu.system) / 1000 / Math.max(1, elapsedMs)) * 1000) / 10;
}
