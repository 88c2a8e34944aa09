// A bench's report for a person: the summary table, a latency histogram and workers over time in the terminal,
// and the live progress line.
import type { BenchReport, WorkersSample } from "./index.js";
import type { LoadProgress } from "./load.js";
import type { HistogramBin, LatencySummary } from "./stats.js";

const BAR = 30;
const SPARK = "▁▂▃▄▅▆▇█";
/** Columns of the workers-over-time line: longer runs are folded, each column the most workers in its span. */
const SPARK_WIDTH = 60;

export function formatReport(report: BenchReport): string {
  const { requests, latency } = report;
  const mode =
    report.mode.kind === "rate" ? `${report.mode.perSecond}/s` : `${report.mode.callers} concurrent`;
  const lines = [
    `flash bench ${report.endpoint.name} (${report.endpoint.url}): ${mode} for ${report.sendingSeconds.toFixed(1)} s`,
    "",
    `requests     ${requests.sent} sent, ${requests.completed} completed, ${requests.failed} failed; ${report.throughput.toFixed(2)} completed/s`,
    "",
    `latency ms   ${["p50", "p90", "p99", "max"].map((h) => h.padStart(8)).join("")}`,
    row("  total", latency.total),
    row("  delay", latency.delay),
    row("  execution", latency.execution),
  ];
  // Streamed requests carry no job timings of their own, but the time to their first token.
  if (latency.firstToken !== undefined) lines.push(row("  first token", latency.firstToken));
  lines.push("");
  if (report.failures.length === 0) lines.push("failures     none");
  else {
    lines.push("failures");
    for (const f of report.failures)
      lines.push(
        `  ${f.kind.padEnd(18)}${String(f.count).padStart(6)}${f.example ? `  first: ${oneLine(f.example)}` : ""}`,
      );
  }
  const w = report.workers;
  lines.push(
    report.coldStarts === null
      ? "cold starts  n/a (a streamed request does not say which worker ran it)"
      : `cold starts  ${report.coldStarts} (jobs that were a new worker's first, sent before it was ready)`,
    `workers      at most ${w.max}; ${w.seconds.toFixed(1)} worker-seconds (${w.source === "platform" ? "the platform's count" : "sampled each second"})${w.started !== undefined ? `; ${w.started} started` : ""}${w.settled ? "" : "; still up when --settle ran out"}`,
    "",
  );
  const { cost } = report;
  lines.push(
    `cost         ${cost.executionSeconds.toFixed(2)} s executing, ${w.seconds.toFixed(1)} worker-seconds billed; catalog: ${cost.catalog}`,
  );
  if (cost.note) lines.push(`  ${cost.note}`);
  for (const g of cost.gpus) {
    const per1000 = g.per1000 === null ? "n/a (none completed)" : `$${g.per1000.toFixed(4)} per 1,000`;
    lines.push(
      `  ${g.gpu}${g.pool ? ` (${g.pool})` : ""} $${g.pricePerHour}/h × ${g.gpuCount}: ${per1000}; this run $${g.total.toFixed(4)} ($${g.execution.toFixed(4)} executing, $${g.idle.toFixed(4)} starting or idle)`,
    );
  }
  lines.push(
    "",
    `generator    ${report.generator.cpuPercent} % of one core (${report.generator.cpuMs} ms CPU)`,
  );
  if (report.generator.stopped) lines.push(`  stopped early: ${report.generator.stopped}`);
  const chart = latencyChart(report.histogram);
  if (chart.length > 0) lines.push("", "latency (send → answer), ms", ...chart);
  if (w.samples.length > 1) lines.push("", ...workersChart(w.samples));
  return lines.join("\n");
}

function row(label: string, s: LatencySummary | null): string {
  if (!s) return `${label.padEnd(13)}${"-".padStart(8)}`;
  return `${label.padEnd(13)}${[s.p50, s.p90, s.p99, s.max].map((v) => String(Math.round(v)).padStart(8)).join("")}`;
}

/** One bar per log-spaced bin. */
export function latencyChart(bins: readonly HistogramBin[]): string[] {
  const most = Math.max(0, ...bins.map((b) => b.count));
  return bins.map((b) => {
    const label = `${b.from}–${b.to}`.padStart(13);
    const bar = "█".repeat(most > 0 ? Math.round((b.count / most) * BAR) : 0);
    return `${label}  ${bar.padEnd(BAR)} ${b.count}`;
  });
}

/** Workers alive over the run, one column per span of time. */
export function workersChart(samples: readonly WorkersSample[]): string[] {
  const span = Math.max(1, Math.ceil(samples.length / SPARK_WIDTH));
  const columns: number[] = [];
  for (let i = 0; i < samples.length; i += span)
    columns.push(Math.max(...samples.slice(i, i + span).map((s) => s.alive)));
  const most = Math.max(1, ...columns);
  const line = columns
    .map((n) => (n === 0 ? " " : SPARK[Math.min(7, Math.ceil((n / most) * 8) - 1)]))
    .join("");
  const last = samples.at(-1)!.t;
  return [`workers over ${last.toFixed(0)} s (max ${Math.max(...columns)})`, `  │${line}│`];
}

/** The live line: elapsed, sent, answered, failed, waiting, workers. */
export function progressLine(p: LoadProgress & { workers: number }): string {
  return `  ${(p.elapsedMs / 1000).toFixed(1)} s  sent ${p.sent}  answered ${p.done}  failed ${p.failed}  in flight ${p.inFlight}  workers ${p.workers}`;
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").slice(0, 100);
