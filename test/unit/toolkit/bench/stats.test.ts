// Nearest-rank percentiles (the console's definition) and the log-spaced histogram.
import { describe, expect, it } from "vitest";
import { histogram, summarize } from "../../../../src/toolkit/bench/stats.js";

describe("latency statistics", () => {
  it("p50/p90/p99 are nearest-rank over every sample", () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i); // 1..100, unsorted
    expect(summarize(values)).toEqual({
      count: 100,
      p50: 50,
      p90: 90,
      p99: 99,
      mean: 50.5,
      max: 100,
      total: 5050,
    });
    expect(summarize([7])).toMatchObject({ p50: 7, p99: 7 });
    expect(summarize([])).toBeNull();
  });

  it("bins every value once, in 1-2-5 steps, without empty bins at either end", () => {
    const values = [3, 4, 12, 15, 18, 120, 480];
    const bins = histogram(values);
    expect(bins.reduce((n, b) => n + b.count, 0)).toBe(values.length);
    expect(bins.map((b) => [b.from, b.to, b.count])).toEqual([
      [2, 5, 2],
      [5, 10, 0],
      [10, 20, 3],
      [20, 50, 0],
      [50, 100, 0],
      [100, 200, 1],
      [200, 500, 1],
    ]);
  });
});
