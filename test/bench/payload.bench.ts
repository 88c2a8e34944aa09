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

function median(fn: () => unknown): number {
  fn();
  fn();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    fn();
    times.push((performance.now() - t) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const mbps = (bytes: number, seconds: number): number => bytes / 1e6 / seconds;

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
      const tDecode = median(() => decode(bytes));
      const value = decode(bytes);
      let encodedSize = 0;
      const tEncode = median(() => {
        encodedSize = encode(value).length;
      });
      const decodeMbps = mbps(bytes.length, tDecode);
      const pyLoads = mbps(p.size, p.loads);
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
