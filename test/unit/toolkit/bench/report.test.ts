// The report a person reads: the summary table's rows, failures by kind, the latency bars and workers over time.
import { describe, expect, it } from "vitest";
import type { BenchReport } from "../../../../src/toolkit/bench/index.js";
import { formatReport, latencyChart, workersChart } from "../../../../src/toolkit/bench/report.js";

const summary = (p50: number, max: number) => ({
  count: 3,
  p50,
  p90: max,
  p99: max,
  mean: p50,
  max,
  total: 3 * p50,
});

const report: BenchReport = {
  endpoint: { id: "echo", name: "echo", url: "http://127.0.0.1:8000/v2/echo" },
  mode: { kind: "rate", perSecond: 2 },
  sendingSeconds: 2,
  answeredSeconds: 2.2,
  requests: { sent: 4, completed: 3, failed: 1 },
  throughput: 1.5,
  latency: { total: summary(20, 900), delay: summary(1, 800), execution: summary(10, 40) },
  histogram: [
    { from: 10, to: 20, count: 1 },
    { from: 20, to: 50, count: 2 },
  ],
  failures: [{ kind: "HTTP 429", count: 1, example: "too\nmany" }],
  coldStarts: 1,
  workers: {
    samples: [
      { t: 0, alive: 0, ready: 0, running: 0 },
      { t: 1, alive: 2, ready: 1, running: 1 },
      { t: 2, alive: 1, ready: 1, running: 0 },
    ],
    max: 2,
    seconds: 12.5,
    source: "platform",
    sampledSeconds: 3,
    started: 2,
    settled: true,
  },
  cost: {
    catalog: "gpus.json",
    executionSeconds: 0.03,
    gpus: [
      {
        gpu: "NVIDIA GeForce RTX 4090",
        pool: "ADA_24",
        pricePerHour: 1.1,
        gpuCount: 1,
        total: 0.0038,
        execution: 0.0001,
        idle: 0.0037,
        per1000: 1.2731,
      },
    ],
  },
  generator: { cpuPercent: 1.5, cpuMs: 30 },
};

describe("bench report", () => {
  it("shows each latency split, failures by kind, cold starts, workers and the cost per 1,000", () => {
    const text = formatReport(report);
    expect(text).toContain("requests     4 sent, 3 completed, 1 failed; 1.50 completed/s");
    expect(text).toContain("  total            20     900     900     900");
    expect(text).toContain("  delay             1     800     800     800");
    expect(text).toContain("  HTTP 429               1  first: too many");
    expect(text).toContain("cold starts  1 ");
    expect(text).toContain("at most 2; 12.5 worker-seconds (the platform's count); 2 started");
    expect(text).toContain(
      "  NVIDIA GeForce RTX 4090 (ADA_24) $1.1/h × 1: $1.2731 per 1,000; this run $0.0038 ($0.0001 executing, $0.0037 starting or idle)",
    );
  });

  it("draws bars in proportion and workers as one column per look", () => {
    expect(latencyChart(report.histogram)).toEqual([
      `        10–20  ${"█".repeat(15).padEnd(30)} 1`,
      `        20–50  ${"█".repeat(30)} 2`,
    ]);
    expect(workersChart(report.workers.samples)).toEqual(["workers over 2 s (max 2)", "  │ █▄│"]);
  });
});
