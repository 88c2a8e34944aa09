/** One line of the benchmark table: a figure, the baseline measured in the same run, and the target. */
export interface BenchRow {
  suite: string;
  name: string;
  value: number;
  unit: string;
  /** The ceiling or reference measured in the same run, e.g. a bare fetch loop or CPython. */
  baseline?: { name: string; value: number };
  /** The target in words, e.g. ">= 60 % of baseline". */
  target?: string;
  /** Whether the figure meets the target; left out when there is none. */
  ok?: boolean;
}

/** A benchmark module's default export. */
export type Bench = () => Promise<BenchRow[]>;

const fmt = (n: number): string =>
  Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(3);

export function toMarkdown(rows: readonly BenchRow[]): string {
  const lines = [
    "| suite | figure | value | baseline (same run) | ratio | target | met |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const base = r.baseline ? `${r.baseline.name}: ${fmt(r.baseline.value)} ${r.unit}` : "";
    const ratio = r.baseline && r.baseline.value !== 0 ? `${fmt(r.value / r.baseline.value)}×` : "";
    const met = r.ok === undefined ? "" : r.ok ? "yes" : "**no**";
    lines.push(
      `| ${r.suite} | ${r.name} | ${fmt(r.value)} ${r.unit} | ${base} | ${ratio} | ${r.target ?? ""} | ${met} |`,
    );
  }
  return lines.join("\n");
}
