// `npm run bench hostile`: the pickle codec on the hostile-input suite's generated pickles (hostile-pickles.ts) —
// decode and encode-back time per MB of each kind beside CPython's pickle.loads of the same bytes, and for the
// kinds that take the most memory the heap a decode needs per input byte: the smallest --max-old-space-size a
// child decodes it in, less what an empty pickle needs (docs/remote-functions.md promises at most 256). The young
// generation lies outside that cap, so a kind needing only a few MB reads low.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { decode, encode } from "../../src/payload/index.js";
import { HOSTILE } from "../unit/payload/hostile-pickles.js";
import { findPython } from "../unit/payload/python.js";
import type { BenchRow } from "./report.js";

/** Each timed pickle's size: large enough for V8's weak tables to show superlinear growth, as they did. */
const TIME_BYTES = 4_000_000;
const MEMORY_BYTES = 1_000_000;
/** Kinds CPython itself cannot load in bounded memory (its memo is as long as the largest index; no copy budget). */
const NOT_IN_CPYTHON = new Set(["sparse-memo", "far-memo", "text-memo", "set-copies", "bytes-copies"]);
/** The kinds that took the most heap per input byte. */
const MEMORY_KINDS = [
  "empty-sets-walked",
  "empty-sets",
  "empty-frozensets",
  "empty-tuples",
  "one-tuples",
  "empty-bytes",
  "sparse-memo",
  "dict-int-keys",
];
const HEAP_PER_BYTE = 256;
const FIXTURE = fileURLToPath(new URL("../unit/payload/fixtures/decode-hostile.ts", import.meta.url));

const PYTHON_LOADS = `
import pickle, sys, time
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    times = []
    for _ in range(3):
        t = time.perf_counter()
        try:
            pickle.loads(data)
        except Exception:
            pass
        times.append(time.perf_counter() - t)
    print(sorted(times)[1])
`;

/** Median of three runs, in ms; a refusal counts as done. */
function medianMs(fn: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    try {
      fn();
    } catch {
      // a refusal is the outcome being timed
    }
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[1]!;
}

/** CPython's pickle.loads of each file, in ms (undefined without a Python). */
function cpythonMs(files: string[]): (number | undefined)[] {
  const python = findPython();
  if (python.path === null || files.length === 0) return files.map(() => undefined);
  const out = spawnSync(python.path, ["-c", PYTHON_LOADS, ...files], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`python failed: ${out.stderr}`);
  return out.stdout
    .trim()
    .split("\n")
    .map((s) => Number(s) * 1000);
}

function timeRows(on: string): BenchRow[] {
  const dir = mkdtempSync(join(tmpdir(), "hostile-bench-"));
  try {
    const names = Object.keys(HOSTILE);
    const safe = names.filter((n) => !NOT_IN_CPYTHON.has(n));
    const files = safe.map((name) => {
      const file = join(dir, `${name}.pkl`);
      writeFileSync(file, HOSTILE[name]!.make(TIME_BYTES));
      return file;
    });
    const py = new Map(cpythonMs(files).map((ms, i) => [safe[i]!, ms]));
    return names.map((name) => {
      const bytes = HOSTILE[name]!.make(TIME_BYTES);
      const mb = bytes.length / 1e6;
      let value: unknown;
      const ms = medianMs(() => {
        value = undefined;
        value = decode(bytes);
      });
      const back = value === undefined ? 0 : medianMs(() => encode(value));
      const cp = py.get(name);
      return {
        suite: "hostile",
        name: `decode ${name}: ${HOSTILE[name]!.what} (${mb.toFixed(1)} MB, ${on})${back > 0 ? `; encoding the value back ${(back / mb).toFixed(0)} ms/MB` : ""}`,
        value: ms / mb,
        unit: "ms/MB",
        ...(cp === undefined ? {} : { baseline: { name: "CPython pickle.loads", value: cp / mb } }),
      };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Whether the fixture decodes `name` (of MEMORY_BYTES) in an old space of `mb`. */
function decodesIn(mb: number, name: string): boolean {
  const args = [
    `--max-old-space-size=${mb}`,
    "--import",
    "tsx",
    FIXTURE,
    String(MEMORY_BYTES),
    "decode",
    name,
  ];
  return spawnSync(process.execPath, args, { stdio: "ignore", timeout: 120_000 }).status === 0;
}

/** The smallest heap (MB, to 1/16) the fixture decodes `name` in, by bisection. */
function heapNeeded(name: string): number {
  let lo = 8;
  let hi = 1024;
  while (hi - lo > Math.max(1, lo / 16)) {
    const mid = Math.floor((lo + hi) / 2);
    if (decodesIn(mid, name)) hi = mid;
    else lo = mid;
  }
  return hi;
}

function memoryRows(on: string): BenchRow[] {
  const base = heapNeeded("huge-str-length");
  return MEMORY_KINDS.map((name) => {
    const perByte = ((heapNeeded(name) - base) * 2 ** 20) / MEMORY_BYTES;
    return {
      suite: "hostile",
      name: `heap to decode ${name}: ${HOSTILE[name]!.what} (1 MB, ${on}; smallest old space less an empty pickle's ${base} MB)`,
      value: perByte,
      unit: "B per input byte",
      target: `<= ${HEAP_PER_BYTE} (docs/remote-functions.md)`,
      ok: perByte <= HEAP_PER_BYTE,
    };
  });
}

export default async function bench(): Promise<BenchRow[]> {
  const on = `Node ${process.version}`;
  return [...timeRows(on), ...memoryRows(on)];
}
