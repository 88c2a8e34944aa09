// Decoder and encoder details the vector files do not pin down: text opcodes, copies, number edges,
// what the encoder refuses, and the JSON form.
import { describe, expect, it } from "vitest";
import {
  asByteArray,
  asFrozenSet,
  asTuple,
  bytearray,
  decode,
  encode,
  frozenset,
  isByteArray,
  isFrozenSet,
  isTuple,
  PickleError,
  PyFloat,
  toJson,
  tuple,
} from "../../../src/payload/index.js";
import { pk } from "./bytes.js";
import { mismatch, toTyped } from "./typed.js";

describe("decoder", () => {
  it("reads protocol-0 text opcodes", () => {
    expect(decode(pk("I42\n."))).toBe(42);
    expect(decode(pk("I01\n."))).toBe(true);
    expect(decode(pk("I00\n."))).toBe(false);
    expect(decode(pk("L123456789012345678901234567890L\n."))).toBe(123456789012345678901234567890n);
    expect(decode(pk("F1.5\n."))).toBe(1.5);
    expect(decode(pk("F2.0\n."))).toEqual(new PyFloat(2));
    expect(decode(pk("S'a\\x41\\n'\n."))).toBe("aA\n");
    expect(decode(pk("Vcaf\\u00e9 \\U0001f600\n."))).toBe("café 😀");
    expect(decode(pk("(lp0\nI1\naI2\na."))).toEqual([1, 2]);
    expect(decode(pk("(dp0\nVa\np1\nI1\ns."))).toEqual({ a: 1 });
    const t = decode(pk("(I1\nI2\nt."));
    expect(isTuple(t)).toBe(true);
    const rec = decode(pk("(lp0\ng0\na.")) as unknown[];
    expect(rec[0]).toBe(rec);
  });

  it("copies bytes out of the input instead of keeping views", () => {
    const input = Buffer.from(encode({ b: new Uint8Array([1, 2, 3]), ba: bytearray([4]) }));
    const v = decode(input) as { b: Uint8Array; ba: Uint8Array };
    input.fill(0);
    expect([...v.b]).toEqual([1, 2, 3]);
    expect([...v.ba]).toEqual([4]);
    expect(v.b.buffer).not.toBe(input.buffer);
    expect(v.b.constructor).toBe(Uint8Array);
  });

  it("reads LONG1 of every length exactly, both signs", () => {
    for (let bits = 1; bits < 80; bits++) {
      for (const v of [2n ** BigInt(bits) - 1n, -(2n ** BigInt(bits)), 2n ** BigInt(bits) + 12345n]) {
        const got = decode(encode(v));
        const want = v >= -(2n ** 53n - 1n) && v <= 2n ** 53n - 1n ? Number(v) : v;
        expect(got).toBe(want);
      }
    }
    // lengths longer than the value needs (another writer may pad), and the safe-integer edges at 7 and 8 bytes
    expect(decode(pk(0x8a, 8, [5, 0, 0, 0, 0, 0, 0, 0], 0x2e))).toBe(5);
    expect(decode(pk(0x8a, 8, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 0x2e))).toBe(-1);
    expect(decode(pk(0x8a, 7, [0, 0, 0, 0, 0, 0, 0x80], 0x2e))).toBe(-(2n ** 55n));
    expect(decode(pk(0x8a, 8, [1, 0, 0, 0, 0, 0, 0xe0, 0xff], 0x2e))).toBe(-Number.MAX_SAFE_INTEGER);
    expect(decode(pk(0x8a, 8, [0, 0, 0, 0, 0, 0, 0xe0, 0xff], 0x2e))).toBe(-(2n ** 53n));
  });

  it("keeps an integral float apart from an int, and plain numbers where no tag is needed", () => {
    expect(decode(pk(0x80, 5, 0x47, [0x3f, 0xf0, 0, 0, 0, 0, 0, 0], 0x2e))).toEqual(new PyFloat(1));
    expect(Object.is(decode(pk(0x80, 5, 0x47, [0x80, 0, 0, 0, 0, 0, 0, 0], 0x2e)), -0)).toBe(true);
    expect(decode(encode(2 ** 60))).toBe(2 ** 60);
  });

  it("numbers memo entries as Python does when MEMOIZE and explicit PUT indices are mixed", () => {
    // PUT 5, then MEMOIZE takes len(memo) = 1
    expect(decode(pk(0x80, 4, 0x4e, 0x71, 5, 0x30, 0x8c, 1, "a", 0x94, 0x30, 0x68, 1, 0x2e))).toBe("a");
    expect(decode(pk(0x80, 4, 0x4e, 0x71, 5, 0x30, 0x8c, 1, "a", 0x94, 0x30, 0x68, 5, 0x2e))).toBeNull();
  });

  it("keeps memo entries at indices far beyond the input length", () => {
    const far = [0x00, 0xe1, 0xf5, 0x05]; // 100,000,000
    expect(decode(pk(0x80, 2, 0x8c, 1, "x", 0x72, far, 0x30, 0x6a, far, 0x2e))).toBe("x");
    expect(() => decode(pk(0x80, 2, 0x8c, 1, "x", 0x72, far, 0x30, 0x6a, 0, 0, 0, 0, 0x2e))).toThrow(
      /Memo value not found at index 0/,
    );
  });

  it("rejects lone UTF-8 garbage the way Python's codec does, but keeps surrogatepass sequences", () => {
    expect(() => decode(pk(0x80, 5, 0x8c, 2, 0xc3, 0x28, 0x2e))).toThrow(/can't decode byte 0xc3/);
    expect(decode(pk(0x80, 5, 0x8c, 3, 0xed, 0xa0, 0x80, 0x2e))).toBe("\ud800");
  });
});

describe("encoder", () => {
  it("maps numbers: safe integers → int, everything else → float", () => {
    expect(mismatch({ t: "int", v: "3" }, decode(encode(3)))).toBeNull();
    expect(mismatch({ t: "float", v: "-0.0" }, decode(encode(-0)))).toBeNull();
    expect(mismatch({ t: "float", v: "9007199254740992.0" }, decode(encode(2 ** 53)))).toBeNull();
    expect(mismatch({ t: "float", v: "3.0" }, decode(encode(new PyFloat(3))))).toBeNull();
    expect(mismatch({ t: "int", v: "5" }, decode(encode(5n)))).toBeNull();
    expect(decode(encode(undefined))).toBeNull();
  });

  it("writes a safe integer beyond int32 as the same minimal LONG1 bytes as its bigint", () => {
    const edges = [
      2 ** 31,
      -(2 ** 31) - 1,
      2 ** 53 - 1,
      -(2 ** 53) + 1,
      1_700_000_000_000_000,
      -1_700_000_000_000_001,
    ];
    for (let bits = 31; bits <= 53; bits++)
      edges.push(2 ** bits - 1, -(2 ** bits), -(2 ** bits) + 1, 2 ** (bits - 1) + 12345);
    for (const v of edges.filter(Number.isSafeInteger)) {
      expect([...encode(v)], String(v)).toEqual([...encode(BigInt(v))]);
      expect(decode(encode(v))).toBe(v);
      // a record's values take their own write path
      expect([...encode({ v })], `{ v: ${v} }`).toEqual([...encode({ v: BigInt(v) })]);
    }
    const floats = { zero: -0, half: 0.5, big: 2 ** 53, nan: Number.NaN };
    const back = decode(encode(floats)) as Record<string, unknown>;
    expect(mismatch({ t: "float", v: "-0.0" }, back.zero)).toBeNull();
    expect(mismatch({ t: "float", v: "0.5" }, back.half)).toBeNull();
    expect(mismatch({ t: "float", v: "9007199254740992.0" }, back.big)).toBeNull();
    expect(mismatch({ t: "float", v: "nan" }, back.nan)).toBeNull();
  });

  it("gives each encode its own bytes, an encode inside an encode included", () => {
    const big = "x".repeat(100_000);
    const first = encode([big, 1]);
    const inner: Uint8Array[] = [];
    const outer = encode({
      get a() {
        inner.push(encode("inner"));
        return 7;
      },
    });
    const second = encode([2]);
    expect(decode(first)).toEqual([big, 1]);
    expect(decode(inner[0]!)).toBe("inner");
    expect(decode(outer)).toEqual({ a: 7 });
    expect(decode(second)).toEqual([2]);
    expect(decode(first)).toEqual([big, 1]);
  });

  it("refuses what has no Python equivalent, with a reason", () => {
    expect(() => encode(() => 1)).toThrow(/cannot pickle a function/);
    expect(() => encode(Symbol("x"))).toThrow(/cannot pickle a symbol/);
    expect(() => encode(new Date())).toThrow(/cannot pickle a Date/);
    expect(() => encode(new Float64Array(2))).toThrow(PickleError);
  });

  it("stops at the depth limit with an error instead of a stack overflow", () => {
    let deep: unknown = [];
    for (let i = 0; i < 3000; i++) deep = [deep];
    expect(() => encode(deep)).toThrow(/nests deeper than 2000 levels/);
    let ok: unknown = [];
    for (let i = 0; i < 1500; i++) ok = [ok];
    expect(() => decode(encode(ok))).not.toThrow();
  });

  it("memoizes repeated strings and shared containers", () => {
    const key = "a-repeated-key";
    const records = Array.from({ length: 100 }, (_, i) => ({ [key]: i }));
    expect(encode(records).length).toBeLessThan(100 * (key.length + 4));
    const shared = [1];
    const v = decode(encode([shared, shared])) as unknown[][];
    expect(v[0]).toBe(v[1]);
  });

  it("writes a tuple that is reached again through its own items once, as Python does", () => {
    const l: unknown[] = [];
    const t = tuple(l, "x");
    l.push(t);
    for (const protocol of [2, 3, 4, 5] as const) {
      const back = decode(encode(t, { protocol })) as unknown[];
      expect(isTuple(back)).toBe(true);
      expect((back[0] as unknown[])[0]).toBe(back);
    }
  });
});

describe("typed comparison helper", () => {
  it("tells apart the types the mapping keeps apart", () => {
    expect(mismatch({ t: "int", v: "1" }, new PyFloat(1))).not.toBeNull();
    expect(mismatch({ t: "float", v: "1.0" }, 1)).not.toBeNull();
    expect(mismatch({ t: "tuple", id: 0, v: [] }, [])).not.toBeNull();
    expect(mismatch({ t: "bytes", b64: "" }, bytearray([]))).not.toBeNull();
    expect(mismatch({ t: "set", id: 0, v: [] }, frozenset([]))).not.toBeNull();
    expect(mismatch(toTyped([1, "a"]), [1, "a"])).toBeNull();
  });
});

describe("Python tags (tuple, bytearray, frozenset)", () => {
  it("are invisible to keys, JSON, spreads and deep equality", () => {
    const t = tuple(1, 2);
    expect(isTuple(t)).toBe(true);
    expect([Object.keys(t), JSON.stringify(t), isTuple([...t])]).toEqual([["0", "1"], "[1,2]", false]);
    expect(t).toEqual([1, 2]);
    expect({ ...bytearray([1]) }).toEqual({ 0: 1 });
    expect(frozenset([1])).toEqual(new Set([1]));
  });

  it("hold for values that can take no property (frozen, sealed) and for those another copy of the package tagged", () => {
    expect(isTuple(asTuple(Object.freeze([1]) as number[]))).toBe(true);
    expect(isFrozenSet(asFrozenSet(Object.freeze(new Set([1]))))).toBe(true);
    expect(isByteArray(asByteArray(Object.preventExtensions(new Uint8Array(0))))).toBe(true);
    const mine = Object.defineProperty([1], Symbol.for("flash-worker.tuple"), { value: true });
    const registry = (globalThis as Record<symbol, { tuples: WeakSet<object> }>)[
      Symbol.for("flash-worker.python-tags")
    ]!;
    const older = [2];
    registry.tuples.add(older);
    expect([isTuple(mine), isTuple(older), isTuple([3])]).toEqual([true, true, false]);
  });
});

describe("toJson", () => {
  it("turns decoded values into plain JSON data", () => {
    const v = {
      big: 2n ** 70n,
      f: new PyFloat(2),
      b: new Uint8Array([104, 105]),
      t: tuple(1),
      s: new Set([1]),
    };
    expect(toJson(v)).toEqual({ big: "1180591620717411303424", f: 2, b: "aGk=", t: [1], s: [1] });
    expect(toJson(new Map<unknown, unknown>([[1, "a"]]))).toEqual({ "1": "a" });
    expect(toJson(Number.NaN)).toBeNull();
  });
  it("writes ints of up to 4,300 digits and refuses longer ones with json.dumps's message", () => {
    const most = 10n ** 4300n - 1n;
    expect(toJson([most, -most])).toEqual([most.toString(), (-most).toString()]);
    // CPython 3.11's json.dumps(10**4300); a 5 MB int's decimal text would take V8 seconds to write
    const message =
      "Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit";
    for (const v of [most + 1n, -most - 1n, 1n << 40_000_000n]) {
      expect(() => toJson({ v })).toThrow(PickleError);
      expect(() => toJson({ v })).toThrow(message);
    }
  });
  it("refuses cycles and keeps __proto__ as data", () => {
    const c: unknown[] = [];
    c.push(c);
    expect(() => toJson(c)).toThrow(/contains itself/);
    const o = decode(encode(new Map([["__proto__", 1]]))) as object;
    expect(Object.getPrototypeOf(toJson(o))).toBe(Object.prototype);
    expect(Object.keys(toJson(o) as object)).toEqual(["__proto__"]);
  });
});
