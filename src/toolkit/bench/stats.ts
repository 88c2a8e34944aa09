// Percentiles and histograms of a bench's latencies: exact (every sample kept, nearest rank), as the platform's own
// console computes them (src/platform/console/metrics.ts), so both sides agree on what p99 means.

/** p50/p90/p99, mean and max of one latency, in ms; null for no samples. */
export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
  /** The sum, in ms: what execution seconds and cost are made of. */
  total: number;
}

/** Nearest-rank percentile of ascending-sorted values. */
export function nearestRank(sorted: readonly number[], p: number): number {
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? 0;
}

export function summarize(values: readonly number[]): LatencySummary | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const total = sorted.reduce((sum, v) => sum + v, 0);
  return {
    count: sorted.length,
    p50: nearestRank(sorted, 50),
    p90: nearestRank(sorted, 90),
    p99: nearestRank(sorted, 99),
    mean: total / sorted.length,
    max: sorted[sorted.length - 1]!,
    total,
  };
}

/** One bar of a histogram: values in [from, to) ms. */
export interface HistogramBin {
  from: number;
  to: number;
  count: number;
}

/** Log-spaced bins (1-2-5 steps) from the smallest to the largest value: latencies span orders of magnitude. */
export function histogram(values: readonly number[]): HistogramBin[] {
  if (values.length === 0) return [];
  const min = Math.max(1, Math.min(...values));
  const max = Math.max(...values);
  const edges: number[] = [];
  for (
    let decade = 10 ** Math.floor(Math.log10(min));
    edges.length === 0 || edges.at(-1)! <= max;
    decade *= 10
  ) {
    for (const step of [1, 2, 5]) edges.push(step * decade);
  }
  const bins: HistogramBin[] = [];
  let from = 0;
  for (const to of edges) {
    bins.push({ from, to, count: 0 });
    from = to;
  }
  for (const v of values) {
    const bin = bins.find((b) => v < b.to) ?? bins.at(-1)!;
    bin.count++;
  }
  // Empty bins before the first value and after the last say nothing.
  while (bins.length > 1 && bins[0]!.count === 0) bins.shift();
  while (bins.length > 1 && bins.at(-1)!.count === 0) bins.pop();
  return bins;
}
