// An I/O-bound worker that runs several jobs at once: while one job waits on a (simulated) downstream
// service, the worker takes the next. The concurrency function is asked before every job-take, so the
// worker can ramp up, or back off under memory pressure, without a restart.
import { getHeapStatistics } from "node:v8";
import { handler, type Job } from "flash-worker";

interface LookupInput {
  /** Words to look up; each lookup is one awaited call to the downstream service. */
  words: string[];
  /** How long the downstream service takes per call (default 100 ms). */
  delay_ms?: number;
}

/** Most jobs this worker runs at once: MAX_CONCURRENCY, default 4. */
const MAX_CONCURRENCY = Math.max(1, Number.parseInt(process.env.MAX_CONCURRENCY ?? "4", 10) || 4);
/** Above this share of the heap limit in use, the worker takes fewer jobs. */
const HEAP_HIGH_WATER = 0.8;

/**
 * runpod-python's `concurrency_modifier`: given the current concurrency, returns the next one. One more slot
 * per take until MAX_CONCURRENCY, and one fewer while the heap is nearly full.
 */
export function concurrency(current: number, heapUsedShare = heapShare()): number {
  if (heapUsedShare > HEAP_HIGH_WATER) return Math.max(1, current - 1);
  return Math.min(current + 1, MAX_CONCURRENCY);
}

function heapShare(): number {
  const heap = getHeapStatistics();
  return heap.used_heap_size / heap.heap_size_limit;
}

/** The downstream call: waits, and gives up at once when the job is cancelled. */
function lookup(
  word: string,
  delayMs: number,
  signal: AbortSignal,
): Promise<{ word: string; length: number }> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve({ word, length: [...word].length }), delayMs);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

export default handler(
  async (job: Job<LookupInput>) => {
    const { words, delay_ms: delayMs = 100 } = job.input;
    if (!Array.isArray(words) || words.some((w) => typeof w !== "string")) {
      return { error: "input.words must be a list of strings" };
    }
    const started = performance.now();
    // The calls of one job run side by side too; nothing here blocks the event loop.
    const results = await Promise.all(words.map((word) => lookup(word, delayMs, job.signal)));
    job.log.info(`${words.length} lookup(s) in ${Math.round(performance.now() - started)} ms`);
    return { results, total_length: results.reduce((sum, r) => sum + r.length, 0) };
  },
  { concurrency },
);
