// The Prometheus text format the platform and the load-balanced worker serve: cumulative histogram buckets, escaping.
import { describe, expect, it } from "vitest";
import { Histogram, prometheusText } from "../../../src/http/prometheus.js";

describe("Histogram", () => {
  it("counts each bucket cumulatively: a value is in every bucket whose bound it is at or under", () => {
    const h = new Histogram([0.1, 1, 10]);
    for (const value of [0.05, 0.1, 0.5, 1, 5, 50]) h.observe(value);
    expect(h.buckets()).toEqual([
      ["0.1", 2],
      ["1", 4],
      ["10", 5],
      ["+Inf", 6],
    ]);
    expect(h.count).toBe(6);
    expect(h.sum).toBeCloseTo(56.65);
  });
});

describe("prometheusText", () => {
  it("escapes label values and help text as the format says", () => {
    const text = prometheusText([
      {
        name: "m",
        help: 'a \\ b\nc "d"',
        type: "gauge",
        samples: [{ labels: { l: 'x\\y\n"z"' }, value: 1 }],
      },
    ]);
    expect(text).toContain('# HELP m a \\\\ b\\nc "d"\n');
    expect(text).toContain('m{l="x\\\\y\\n\\"z\\""} 1\n');
  });
});
