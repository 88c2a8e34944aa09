// `npm run bench payload`: decode and encode MB/s of the pickle codec on ~9 MB payloads made by cloudpickle
// (a large str, bytes, ~160k small dict records), beside CPython's C pickle.loads / pickle.dumps on the same
// bytes in the same run, and pickleparser on the records.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Parser } from "pickleparser";
import { decode, encode } from "../../src/payload/index.js";
import { findPython } from "../payload/python.js";
import type { BenchRow } from "./report.js";

const RUNS = 7;
/** Records decode: rounds that alternate CPython and TypeScript, so both see the same load on a shared box. */
const ROUNDS = 7;
const ROUND_RUNS = 5;

// Times C pickle.loads on one file: median of ROUND_RUNS (seconds), printed as one number.
const PYTHON_LOADS = `
import pickle, statistics, sys, time
data = open(sys.argv[1], "rb").read()
pickle.loads(data)
times = []
for _ in range(${ROUND_RUNS}):
    t = time.perf_counter(); pickle.loads(data); times.append(time.perf_counter() - t)
print(statistics.median(times))
`;

// Builds the payloads with cloudpickle and times C pickle on them; prints one JSON line of medians (seconds).
const PYTHON = `
import json, os, pickle, statistics, sys, time
import cloudpickle
out = sys.argv[1]
records = [{"id": i, "name": "user%d" % i, "email": "user%d@example.com" % i, "score": i / 7,
            "active": i % 2 == 0, "group": i % 100} for i in range(160_000)]
values = {"str": "The quick brown fox jumps over the lazy dog. " * 210_000,
          "bytes": bytes(range(256)) * 36_000,
          "records": records}
def median(fn):
    fn(); fn()
    times = []
    for _ in range(${RUNS}):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    return statistics.median(times)
res = {}
for name, v in values.items():
    data = cloudpickle.dumps(v)
    with open(os.path.join(out, name + ".pkl"), "wb") as f:
        f.write(data)
    res[name] = {"size": len(data), "loads": median(lambda: pickle.loads(data)),
                 "dumps": median(lambda: pickle.dumps(v, 5)), "dumps_size": len(pickle.dumps(v, 5))}
print(json.dumps(res))
`;

interface PyTimes {
  size: number;
  loads: number;
  dumps: number;
  dumps_size: number;
}

function median(fn: () => unknown, runs = RUNS): number {
  fn();
  fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    fn();
    times.push((performance.now() - t) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const mbps = (bytes: number, seconds: number): number => bytes / 1e6 / seconds;

const mid = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Records decode against CPython, alternating rounds (each a median of ROUND_RUNS) and taking medians over
 * rounds: on a noisy box a single block of Python runs followed by a block of ours compares different loads.
 * About a third of our time is V8 scavenges copying the (all live) result; a larger young generation
 * (--max-semi-space-size) changes that share, but users run with default flags, so none are set here.
 */
function recordsRounds(python: string, file: string, bytes: Uint8Array): { ts: number; py: number } {
  const ts: number[] = [];
  const py: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const out = spawnSync(python, ["-c", PYTHON_LOADS, file], { encoding: "utf8" });
    if (out.status !== 0) throw new Error(`python failed: ${out.stderr}`);
    py.push(Number(out.stdout));
    ts.push(median(() => decode(bytes), ROUND_RUNS));
  }
  return { ts: mid(ts), py: mid(py) };
}

export default async function bench(): Promise<BenchRow[]> {
  const python = findPython();
  if (python.path === null) {
    process.stderr.write(
      `payload bench: ${python.reason}; the payloads are made by cloudpickle, so nothing to measure\n`,
    );
    return [];
  }
  const dir = mkdtempSync(join(tmpdir(), "payload-bench-"));
  try {
    const r = spawnSync(python.path, ["-c", PYTHON, dir], { encoding: "utf8", maxBuffer: 1 << 20 });
    if (r.status !== 0) throw new Error(`python failed: ${r.stderr}`);
    const py = JSON.parse(r.stdout) as Record<string, PyTimes>;
    const rows: BenchRow[] = [];
    for (const name of ["records", "str", "bytes"]) {
      const bytes = new Uint8Array(readFileSync(join(dir, `${name}.pkl`)));
      const p = py[name]!;
      const label = `${name} (${(bytes.length / 1e6).toFixed(1)} MB)`;
      const rounds = name === "records" ? recordsRounds(python.path, join(dir, `${name}.pkl`), bytes) : null;
      const tDecode = rounds?.ts ?? median(() => decode(bytes));
      const value = decode(bytes);
      let encodedSize = 0;
      const tEncode = median(() => {
        encodedSize = encode(value).length;
      });
      const decodeMbps = mbps(bytes.length, tDecode);
      const pyLoads = mbps(p.size, rounds?.py ?? p.loads);
      rows.push({
        suite: "payload",
        name: `decode ${label}`,
        value: decodeMbps,
        unit: "MB/s",
        baseline: { name: "CPython pickle.loads", value: pyLoads },
        ...(name === "records" ? { target: ">= 1× CPython (issue 4)", ok: decodeMbps >= pyLoads } : {}),
      });
      rows.push({
        suite: "payload",
        name: `encode ${label}`,
        value: mbps(encodedSize, tEncode),
        unit: "MB/s",
        baseline: { name: "CPython pickle.dumps", value: mbps(p.dumps_size, p.dumps) },
      });
      if (name === "records") {
        const parser = new Parser({ unpicklingTypeOfDictionary: "Map", unpicklingTypeOfSet: "Set" });
        rows.push({
          suite: "payload",
          name: `pickleparser decode ${label}`,
          value: mbps(
            bytes.length,
            median(() => parser.parse(bytes)),
          ),
          unit: "MB/s",
          baseline: { name: "CPython pickle.loads", value: pyLoads },
        });
      }
    }
    return rows;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
