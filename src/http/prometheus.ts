// Prometheus text exposition format (version 0.0.4), written here: the platform and the load-balanced worker expose
// a few counters, gauges and histograms they already keep; prom-client would add a dependency, a global registry
// and a second copy of those numbers to the worker's import graph for what is one small formatting function.

export type MetricType = "counter" | "gauge" | "histogram";
export type Labels = Readonly<Record<string, string>>;

export interface MetricFamily {
  name: string;
  help: string;
  type: MetricType;
  /** Counter and gauge values by label set; a histogram's series are its `histograms`. */
  samples?: readonly { labels: Labels; value: number }[];
  histograms?: readonly { labels: Labels; histogram: Histogram }[];
}

/** The content type Prometheus scrapes this format as. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Upper bounds in seconds, from 5 ms to 5 min: jobs and requests span both ends. */
export const SECONDS_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
] as const;

/** A cumulative histogram as Prometheus reads it: counts per upper bound (le), their sum and count. */
export class Histogram {
  private readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(readonly bounds: readonly number[] = SECONDS_BUCKETS) {
    this.counts = bounds.map(() => 0);
  }

  /** Counts the value in its own bucket only (the first bound it is under); buckets() sums them up. */
  observe(value: number): void {
    this.sum += value;
    this.count++;
    for (let i = 0; i < this.bounds.length; i++) {
      if (value <= (this.bounds[i] ?? 0)) {
        this.counts[i]!++;
        return;
      }
    }
  }

  /** [le, cumulative count] pairs, "+Inf" last. */
  buckets(): [string, number][] {
    let below = 0;
    return [
      ...this.bounds.map((b, i): [string, number] => {
        below += this.counts[i] ?? 0;
        return [String(b), below];
      }),
      ["+Inf", this.count],
    ];
  }
}

const escapeLabel = (value: string) =>
  value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
const escapeHelp = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");

function labelText(labels: Labels): string {
  const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return pairs.length > 0 ? `{${pairs.join(",")}}` : "";
}

function number(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

/** The families as one exposition: HELP and TYPE lines, then each series. */
export function prometheusText(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const { labels, value } of family.samples ?? []) {
      lines.push(`${family.name}${labelText(labels)} ${number(value)}`);
    }
    for (const { labels, histogram } of family.histograms ?? []) {
      for (const [le, count] of histogram.buckets()) {
        lines.push(`${family.name}_bucket${labelText({ ...labels, le })} ${count}`);
      }
      lines.push(`${family.name}_sum${labelText(labels)} ${number(histogram.sum)}`);
      lines.push(`${family.name}_count${labelText(labels)} ${histogram.count}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
