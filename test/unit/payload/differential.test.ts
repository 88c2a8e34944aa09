// Differential fuzzing against CPython: mutated pickles that Python wrote are loaded by CPython's unpickler and
// by decode; where CPython raises, decode raises; where it loads, decode loads, and our value written back
// with encode loads in CPython equal to CPython's own. All cases go to one Python process in one batch.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeGeneral } from "../../../src/payload/decode.js";
import {
  DeserializeTimeoutError,
  decode,
  encode,
  PickleError,
  PickleGlobalError,
} from "../../../src/payload/index.js";
import { FUZZ_SEED } from "../../fuzz-seed.js";
import { u32 } from "./bytes.js";
import { mutate, mutation, records } from "./mutate.js";
import { findPython, PythonPeer } from "./python.js";
import { toTyped, type VectorFile } from "./typed.js";

/** Mutated pickles per run: about two seconds of CPython and decode together. */
const CASES = 20_000;

const python = findPython();
const b64 = (b: Uint8Array): string => Buffer.from(b).toString("base64");
const fromB64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "base64"));

interface Verdict {
  canon?: string;
  error?: string;
  nomem?: boolean;
  notplain?: string;
}
type Outcome = { value: unknown } | { error: Error };

function outcome(fn: () => unknown): Outcome {
  try {
    return { value: fn() };
  } catch (e) {
    if (e instanceof PickleError || e instanceof DeserializeTimeoutError) return { error: e };
    throw e;
  }
}

/** Errors where decode is stricter than CPython on purpose: refused globals and objects, and the limits. */
function byPolicy(e: Error): boolean {
  return (
    e instanceof PickleGlobalError ||
    e instanceof DeserializeTimeoutError ||
    /only decodes plain data|nests deeper than|memo exceeds|expands beyond/.test(e.message)
  );
}

/** The vectors' payloads: what pickle and cloudpickle wrote for plain values, small enough to mutate fast. */
function vectorPayloads(url: URL): Uint8Array[] {
  const file = JSON.parse(readFileSync(url, "utf8")) as VectorFile;
  return file.vectors.flatMap((v) => v.payloads.map((p) => fromB64(p.b64))).filter((b) => b.length < 4000);
}

if (python.path === null) {
  describe("decode against CPython", () => {
    it("needs Debian's python3 with cloudpickle", () => {
      throw new Error(python.reason);
    });
  });
} else {
  const pythonPath = python.path;
  describe(`decode against CPython (${python.reason})`, () => {
    let peer: PythonPeer;
    const bases: Uint8Array[] = [];

    const verdicts = async (cases: Uint8Array[]): Promise<Verdict[]> => {
      const a = await peer.request("verdicts", { cases: cases.map(b64) });
      if (a.error !== undefined) throw new Error(`the Python peer failed: ${a.error}`);
      return (a as { verdicts: Verdict[] }).verdicts;
    };

    /** Loads every case in CPython and in decode, and fails listing the cases where the two differ. */
    const agree = async (cases: Uint8Array[], minLoaded: number): Promise<void> => {
      const theirs = await verdicts(cases);
      const ours = cases.map((c) => outcome(() => decode(c)));
      const general = cases.map((c) => outcome(() => decodeGeneral(c)));

      const disagreements: string[] = [];
      const say = (i: number, what: string): void => {
        disagreements.push(`${what} ← ${b64(cases[i]!)}`);
      };
      const loaded: number[] = [];
      let verdictsGiven = 0;
      cases.forEach((_, i) => {
        const cp = theirs[i]!;
        const o = ours[i]!;
        if ("error" in o !== "error" in general[i]!) say(i, "decode and decodeGeneral disagree");
        if (cp.nomem) return;
        verdictsGiven++;
        if (cp.error !== undefined || cp.notplain !== undefined) {
          if (!("error" in o)) say(i, `CPython raises ${cp.error ?? cp.notplain}, decode loads`);
        } else if ("error" in o) {
          if (!byPolicy(o.error)) say(i, `CPython loads ${cp.canon}, decode raises ${o.error.message}`);
        } else loaded.push(i);
      });

      // what both loaded: our value, written back by encode, loads in CPython to CPython's own value
      const back = await verdicts(loaded.map((i) => encode((ours[i] as { value: unknown }).value)));
      loaded.forEach((i, k) => {
        if (back[k]!.canon !== theirs[i]!.canon)
          say(i, `CPython loads ${theirs[i]!.canon}, ours written back loads as ${JSON.stringify(back[k])}`);
      });

      expect(verdictsGiven, "most cases get a verdict from CPython").toBeGreaterThan(cases.length * 0.9);
      expect(loaded.length, "enough cases load to compare values").toBeGreaterThan(minLoaded);
      expect(
        disagreements.length,
        `disagreements with CPython (what differs ← the base64 pickle), replay with FUZZ_SEED=${FUZZ_SEED}:\n${disagreements.slice(0, 20).join("\n")}`,
      ).toBe(0);
    };

    beforeAll(async () => {
      peer = new PythonPeer(pythonPath);
      // records as CPython pickles them, at every protocol the toolkit's clients use
      for (const n of [6, 90])
        for (const protocol of [2, 3, 4, 5]) {
          const a = await peer.request("dumps_typed", { typed: toTyped(records(n)), protocol });
          if (a.b64 === undefined) throw new Error(`Python could not pickle records: ${a.error}`);
          bases.push(fromB64(a.b64));
        }
      bases.push(...vectorPayloads(new URL("./vectors.json", import.meta.url)));
      bases.push(...vectorPayloads(new URL("../../fixtures/pickle/design-vectors.json", import.meta.url)));
    });
    afterAll(() => peer.close());

    it(`agrees with CPython on ${CASES} mutated pickles (FUZZ_SEED=${FUZZ_SEED})`, async () => {
      const cases = fc
        .sample(fc.tuple(fc.constantFrom(...bases), fc.array(mutation, { minLength: 1, maxLength: 4 })), {
          seed: FUZZ_SEED,
          numRuns: CASES,
        })
        .map(([base, muts]) => mutate(base, muts));
      await agree(cases, CASES * 0.02);
    });

    it("reads protocol-0 INT, LONG and FLOAT lines as CPython's C unpickler does", async () => {
      const alphabet = [..."0123456789+-_ .eExXoObBinfaNL\t\x00"];
      const line = fc
        .array(fc.constantFrom(...alphabet), { minLength: 1, maxLength: 7 })
        .map((a) => a.join(""));
      const cases = fc
        .sample(fc.tuple(fc.constantFrom("I", "L", "F"), line), { seed: FUZZ_SEED, numRuns: 4000 })
        .map(([op, text]) => Uint8Array.from(Buffer.from(`${op}${text}\n.`, "latin1")));
      await agree(cases, 300);
    });

    it("reads protocol-0 STRING lines, escapes and all, as CPython does", async () => {
      const alphabet = [..."\\\\\\x0178nrtabfv'\"9fFz \xe9"];
      const body = fc.array(fc.constantFrom(...alphabet), { maxLength: 12 }).map((a) => a.join(""));
      const cases = fc
        .sample(fc.tuple(fc.constantFrom("'", '"'), body), { seed: FUZZ_SEED, numRuns: 3000 })
        .map(([q, text]) => Uint8Array.from(Buffer.from(`S${q}${text}${q}\n.`, "latin1")));
      await agree(cases, 300);
    });

    it("keeps memo entries at near, far and scattered indices as CPython's memo does", async () => {
      // indices a chunk covers from the start, ones past it until enough entries justify a chunk, and far ones;
      // few of them, so that gets often find what puts stored
      const index = fc.constantFrom(
        0,
        7,
        300,
        4095,
        4096,
        5000,
        6000,
        1 << 18,
        (1 << 18) + 4096,
        (1 << 20) - 1,
      );
      const op = fc.oneof(
        { weight: 3, arbitrary: fc.integer({ min: 0, max: 1 << 30 }).map((v) => [0x4a, ...u32(v)]) }, // BININT
        { weight: 3, arbitrary: index.map((i) => [0x72, ...u32(i)]) }, // LONG_BINPUT
        { weight: 2, arbitrary: index.map((i) => [0x6a, ...u32(i)]) }, // LONG_BINGET
        {
          weight: 1,
          arbitrary: fc.integer({ min: 1, max: 600 }).map((n) => new Array<number>(n).fill(0x94)),
        }, // MEMOIZE runs
        { weight: 1, arbitrary: fc.constant([0x30]) }, // POP
      );
      const cases = fc
        .sample(fc.array(op, { minLength: 1, maxLength: 40 }), { seed: FUZZ_SEED, numRuns: 1000 })
        .map((ops) => Uint8Array.from([0x80, 4, 0x28, 0x4a, 1, 0, 0, 0, ...ops.flat(), 0x6c, 0x2e]));
      await agree(cases, 250);
    });

    it("keeps a dict one dict when a copy of it (DUP, memo get) turns into a Map", async () => {
      // memo 0 and 1 are the strs 'a' and 'b', memo 2 the first dict; each op works on the dicts on top of the stack
      const op = fc.constantFrom(
        [0x7d], // EMPTY_DICT
        [0x32], // DUP
        [0x94], // MEMOIZE
        [0x68, 2], // BINGET of the first dict
        [0x30], // POP
        [0x68, 0, 0x4b, 1, 0x73], // SETITEM 'a': 1
        [0x4b, 7, 0x4b, 2, 0x73], // SETITEM 7: 2 (the dict becomes a Map)
        [0x28, 0x68, 1, 0x4b, 3, 0x68, 0, 0x4b, 4, 0x75], // SETITEMS 'b': 3, 'a': 4 (the records fast path)
        [0x28, 0x4b, 8, 0x4b, 5, 0x75], // SETITEMS 8: 5
      );
      const prefix = [0x80, 4, 0x8c, 1, 0x61, 0x94, 0x8c, 1, 0x62, 0x94, 0x28, 0x7d, 0x94];
      const cases = fc
        .sample(fc.array(op, { minLength: 1, maxLength: 12 }), { seed: FUZZ_SEED, numRuns: 2000 })
        .map((ops) => Uint8Array.from([...prefix, ...ops.flat(), 0x6c, 0x2e]));
      await agree(cases, 300);
    });

    it("reads INT and LONG lines at CPython's 4,300-digit limit to the same value or with the same message", async () => {
      const digits = (n: number, d = "9") => d.repeat(n);
      const lines = [
        ...["I", "L"].flatMap((op) =>
          [
            digits(4300),
            digits(4301),
            `-${digits(4300)}`,
            `-${digits(5000)}`,
            `${"1_".repeat(4300)}1`,
            `0x${digits(100_000, "f")}`,
            `-0o${digits(50_000, "7")}`,
            `0b${digits(60_000, "1")}`,
            `${digits(30, "0")}17`,
            `${digits(30, "0")}18`,
            `-0x${digits(30, "0")}7fffffffffffffff`,
            `0x${digits(30, "0")}8000000000000000`,
            `-${digits(20, "0")}1000000000000000000000`,
          ].map((text) => `${op}${text}${op === "L" ? "L" : ""}\n.`),
        ),
        `p${digits(4301)}\n`,
      ];
      const cases = lines.map((l) =>
        Uint8Array.from(Buffer.from(`${l.startsWith("p") ? "N" : ""}${l}`, "latin1")),
      );
      const theirs = await verdicts(cases);
      const ours = cases.map((c) => outcome(() => decode(c)));
      const back = await verdicts(ours.map((o) => ("value" in o ? encode(o.value) : new Uint8Array(0))));
      cases.forEach((_, i) => {
        const cp = theirs[i]!;
        const o = ours[i]!;
        if (cp.error !== undefined)
          expect("error" in o ? `ValueError: ${o.error.message}` : "loads").toBe(cp.error);
        else expect(back[i]!.canon, lines[i]!.slice(0, 40)).toBe(cp.canon);
      });
    });

    it("writes big ints that CPython reads back and dumps again to the same int, up to 5 MB (linear both ways)", async () => {
      // around every byte boundary (the sign bit's byte), random widths, and issue 43's 5 MB int
      const edges = [8, 9, 64, 65, 2048, 65_536].flatMap((bits) => {
        const p = 1n << BigInt(bits - 1);
        return [p, p - 1n, -p, -p - 1n, 2n * p, -2n * p];
      });
      const random = fc.sample(fc.bigInt({ min: -(1n << 100_000n), max: 1n << 100_000n }), {
        seed: FUZZ_SEED,
        numRuns: 200,
      });
      const huge = (1n << 40_000_000n) - 12_345n;
      const ints = [...edges, ...random, huge, -huge];
      const canon = (v: bigint): string => {
        const ceiling = 10n ** 4300n;
        if (v < ceiling && v > -ceiling) return `int:${v}`;
        return v < 0n ? `int:-0x${(-v).toString(16)}` : `int:0x${v.toString(16)}`;
      };
      const pickles = ints.map((v) => encode(v));
      const theirs = await verdicts(pickles);
      ints.forEach((v, i) => {
        expect(theirs[i], `${v.toString(16).slice(0, 40)}…`).toEqual({ canon: canon(v) });
      });
      for (const v of [huge, -huge, ...edges]) {
        const dumped = await peer.request("echo", { b64: b64(encode(v)), protocol: 5 });
        // safe integers come back as numbers (the int mapping of src/payload/index.ts)
        expect(decode(fromB64(dumped.b64 ?? ""))).toBe(Number.isSafeInteger(Number(v)) ? Number(v) : v);
      }
    });
  });
}
