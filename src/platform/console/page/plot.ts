// Small SVG time plots drawn by hand: bars for counts, lines for p50/p95; a native tooltip on every point.
import { s } from "./dom.js";
import { clock, ms } from "./format.js";

export interface Series {
  label: string;
  className: string;
  /** One value per bucket; null is a gap. */
  values: (number | null)[];
}

export interface PlotSpec {
  title: string;
  /** Bucket start times, oldest first, evenly spaced. */
  times: number[];
  bucketMs: number;
  series: Series[];
  kind: "bars" | "lines";
  unit: "count" | "ms";
}

const W = 360;
const H = 150;
const PAD = { left: 52, right: 8, top: 20, bottom: 22 };

const fmt = (value: number, unit: PlotSpec["unit"]): string => (unit === "ms" ? ms(value) : String(value));

/** A y-axis maximum that reads well: 1, 2 or 5 times a power of ten. */
export function niceMax(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

export function plot(spec: PlotSpec): SVGSVGElement {
  const n = spec.times.length;
  const all = spec.series.flatMap((series) => series.values.filter((v): v is number => v !== null));
  const top = niceMax(Math.max(0, ...all));
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const x = (i: number) => PAD.left + (n <= 1 ? innerW / 2 : (i / (n - 1)) * innerW);
  const y = (v: number) => PAD.top + innerH - (v / top) * innerH;
  const svg = s("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: `plot ${spec.kind}`,
    role: "img",
    "aria-label": spec.title,
  });
  svg.append(s("text", { x: PAD.left, y: 13, class: "plot-title" }, spec.title));
  for (const [i, series] of spec.series.entries()) {
    svg.append(
      s(
        "text",
        { x: W - PAD.right - (spec.series.length - i) * 62, y: 13, class: `legend ${series.className}` },
        `■ ${series.label}`,
      ),
    );
  }
  // Half a request (or half a millisecond) is no tick: an axis up to 1 gets only 0 and 1.
  for (const fraction of top < 2 ? [0, 1] : [0, 0.5, 1]) {
    const value = top * fraction;
    svg.append(
      s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value), class: "grid" }),
      s(
        "text",
        { x: PAD.left - 4, y: y(value) + 3, class: "axis", "text-anchor": "end" },
        fmt(value, spec.unit),
      ),
    );
  }
  if (n > 0) {
    svg.append(
      s("text", { x: PAD.left, y: H - 6, class: "axis" }, clock(spec.times[0])),
      s(
        "text",
        { x: W - PAD.right, y: H - 6, class: "axis", "text-anchor": "end" },
        clock(spec.times[n - 1]),
      ),
    );
  }
  if (all.length === 0) {
    svg.append(
      s(
        "text",
        { x: PAD.left + innerW / 2, y: PAD.top + innerH / 2, class: "axis", "text-anchor": "middle" },
        "no data yet",
      ),
    );
    return svg;
  }
  if (spec.kind === "bars") {
    const width = Math.max(1, (innerW / Math.max(1, n)) * 0.8);
    for (const series of spec.series) {
      series.values.forEach((value, i) => {
        if (value === null || value === 0) return;
        const left = n <= 1 ? x(i) - width / 2 : PAD.left + (i / n) * innerW + width * 0.1;
        svg.append(
          s(
            "rect",
            { x: left, y: y(value), width, height: Math.max(1, y(0) - y(value)), class: series.className },
            s("title", {}, `${clock(spec.times[i])}: ${fmt(value, spec.unit)} ${series.label}`),
          ),
        );
      });
    }
    return svg;
  }
  for (const series of spec.series) {
    let d = "";
    let pen = false;
    series.values.forEach((value, i) => {
      if (value === null) {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${x(i).toFixed(1)},${y(value).toFixed(1)}`;
      pen = true;
    });
    svg.append(s("path", { d, class: `line ${series.className}` }));
    series.values.forEach((value, i) => {
      if (value === null) return;
      svg.append(
        s(
          "circle",
          { cx: x(i), cy: y(value), r: 2.5, class: `dot ${series.className}` },
          s("title", {}, `${clock(spec.times[i])}: ${series.label} ${fmt(value, spec.unit)}`),
        ),
      );
    });
  }
  return svg;
}
