// The hostile-input suite's memory bound: every generated hostile pickle (hostile-pickles.ts) is decoded, and its
// value encoded back, in a child process whose heap is capped at docs/remote-functions.md's factor of the input's
// size. A decoder that needs more dies there of heap exhaustion (the event asserted), where a big machine would
// have let it pass; each pickle must still load, or be refused with its reason.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { HOSTILE } from "./hostile-pickles.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/decode-hostile.ts", import.meta.url));

/** docs/remote-functions.md "Safety and limits": the heap per byte of pickle that decoding it needs, at most. */
const HEAP_PER_BYTE = 256;
/** What Node, tsx and the codec take before any pickle (about 7 MB measured), with room to spare. */
const BASE_MB = 16;
/** The size of every generated pickle: the bound is linear, so a small one shows it as well as a large one. */
const SIZE = 128 * 1024;

interface Line {
  name: string;
  bytes: number;
  outcome: "value" | "error";
  error?: string;
  message?: string;
  length?: number;
}

/** Runs the fixture on `names` in a heap of `heapMb`; resolves with its exit and one parsed line per pickle done. */
function decodeInChild(heapMb: number, size: number, names: readonly string[]) {
  const child = spawn(
    process.execPath,
    [`--max-old-space-size=${heapMb}`, "--import", "tsx", FIXTURE, String(size), "echo", ...names],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    err += chunk.toString("utf8");
  });
  return new Promise<{ code: number | null; signal: string | null; lines: Line[]; err: string }>((resolve) =>
    child.once("close", (code, signal) => {
      const lines = out
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Line);
      resolve({ code, signal, lines, err });
    }),
  );
}

/** Each line checked against what its pickle must end in; a child that died names the pickle it died on. */
async function expectWithin(heapMb: number, size: number, names: readonly string[]): Promise<void> {
  const run = await decodeInChild(heapMb, size, names);
  const died = names[run.lines.length];
  expect(
    { code: run.code, signal: run.signal },
    `died on ${died} (${HOSTILE[died ?? ""]?.what}) in a ${heapMb} MB heap:\n${run.err.slice(-2000)}`,
  ).toEqual({ code: 0, signal: null });
  for (const line of run.lines) {
    const expected = HOSTILE[line.name]!.expect;
    if ("value" in expected) expect(line, line.message).toMatchObject({ outcome: "value" });
    else {
      expect(line.outcome, line.name).toBe("error");
      expect(line.error, line.name).toMatch(/Error$/);
      expect(line.message, line.name).toMatch(expected.error);
      // a refusal says why in a line, however large the pickle
      expect(line.length, line.name).toBeLessThan(1000);
    }
  }
  expect(run.lines.map((l) => l.name)).toEqual(names);
}

describe("hostile pickles decode within the documented heap", () => {
  const names = Object.keys(HOSTILE);
  const heapMb = Math.ceil(BASE_MB + (HEAP_PER_BYTE * SIZE) / 2 ** 20);

  it(`${names.length} kinds of ${SIZE / 1024} KiB, decoded and encoded back in a ${heapMb} MB heap`, async () => {
    expect(names.length).toBeGreaterThanOrEqual(30);
    await expectWithin(heapMb, SIZE, names);
  });

  it("issue 43's 1 MB sparse memo, 200,000 LONG_BINPUTs 4,096 indices apart, loads in a 64 MB heap", async () => {
    // it took 4 GB (32 KiB per 5 bytes) and the worker died of heap exhaustion with every job on it
    await expectWithin(64, 1_000_000, ["sparse-memo", "far-memo", "text-memo"]);
  });

  it("memo-driven copies stop at one copied item per input byte: 1 MB of set() and bytearray() in a 64 MB heap", async () => {
    await expectWithin(64, 1_000_000, ["set-copies", "bytes-copies"]);
  });
});
