// pickleparser 0.2.1 as an independent oracle, on the values it is known to decode correctly
// (dependencies.md §2.3): None, bools, ints in [-2^31, 2^53), non-integral floats, well-formed str,
// bytes, lists, tuples (as arrays), str-keyed dicts, sets — in its Map and Set modes.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { Parser } from "pickleparser";
import { describe, expect, it } from "vitest";
import { decode, encode, PyFloat, tuple } from "../../../src/payload/index.js";
import type { Typed, VectorFile } from "./typed.js";

const oracle = new Parser({ unpicklingTypeOfDictionary: "Map", unpicklingTypeOfSet: "Set" });

/** One comparable shape for both decoders: arrays for tuples/sets/bytes, sorted entries for dicts. */
function normal(v: unknown): unknown {
  if (v instanceof PyFloat) return v.value;
  if (typeof v === "bigint") return Number(v);
  if (v instanceof Uint8Array) return { bytes: [...v] };
  if (Array.isArray(v)) return v.map(normal);
  if (v instanceof Set) return { set: [...v].map(normal) };
  if (v instanceof Map) return { dict: [...v].map(([k, x]) => [normal(k), normal(x)]).sort(byKey) };
  if (typeof v === "object" && v !== null) {
    return {
      dict: Object.entries(v)
        .map(([k, x]) => [k, normal(x)])
        .sort(byKey),
    };
  }
  return v;
}
const byKey = (a: unknown[], b: unknown[]): number => (JSON.stringify(a[0]) < JSON.stringify(b[0]) ? -1 : 1);

/** True when a typed tree holds only what pickleparser decodes correctly. */
function oracleSafe(t: Typed): boolean {
  switch (t.t) {
    case "none":
    case "bool":
      return true;
    case "int":
      return BigInt(t.v) >= -(2n ** 31n) && BigInt(t.v) < 2n ** 53n;
    case "float":
      return !Number.isInteger(Number(t.v)) && t.v !== "nan";
    case "str":
      return (t.v as unknown as { isWellFormed(): boolean }).isWellFormed();
    case "bytes":
      return true;
    case "list":
    case "tuple":
    case "set":
    case "frozenset":
      return t.v.every(oracleSafe);
    case "dict":
      return t.v.every(([k, v]) => k.t === "str" && oracleSafe(v));
    default:
      return false;
  }
}

const value = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", maxDepth: 4 },
    fc.constant(null),
    fc.boolean(),
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Number.isInteger(d)),
    fc.string(),
    fc.uint8Array({ maxLength: 20 }),
    fc.array(tie("v"), { maxLength: 5 }),
    fc.array(tie("v"), { maxLength: 4 }).map((a) => tuple(...a)),
    fc.dictionary(fc.string(), tie("v"), { maxKeys: 4, noNullPrototype: true }),
    fc.uniqueArray(fc.oneof(fc.integer(), fc.string()), { maxLength: 5 }).map((a) => new Set(a)),
  ),
})).v;

describe("pickleparser as an oracle", () => {
  it("agrees on generated values encoded at protocols 4-5 (it reads protocol-3 sets as placeholders)", () => {
    fc.assert(
      fc.property(value, fc.constantFrom(4, 5) as fc.Arbitrary<4 | 5>, (v, protocol) => {
        const bytes = encode(v, { protocol });
        expect(normal(decode(bytes))).toEqual(normal(oracle.parse(bytes)));
      }),
      { numRuns: 1000 },
    );
  });

  it("agrees on the Python-made vectors it handles (cloudpickle protocols 4, 5 and default)", () => {
    const file = JSON.parse(readFileSync(new URL("./vectors.json", import.meta.url), "utf8")) as VectorFile;
    let compared = 0;
    for (const vec of file.vectors) {
      if (!oracleSafe(vec.expected)) continue;
      for (const p of vec.payloads) {
        if (p.producer !== "cloudpickle" || p.protocol === 2 || p.protocol === 3) continue;
        const bytes = new Uint8Array(Buffer.from(p.b64, "base64"));
        expect(normal(decode(bytes)), `${vec.name} p${p.protocol}`).toEqual(normal(oracle.parse(bytes)));
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(100);
  });
});
