// The decoder's record fast paths: short strings cut from a latin1 window, memoized keys, unrolled dict
// stores, dict items read straight into the dict. Each case must give the same values as the general paths.
import { describe, expect, it } from "vitest";
import { decode, encode } from "../../../src/payload/index.js";
import { pk, sbu, u32 } from "./bytes.js";

/** Many records, so strings land on both sides of window boundaries and keys come back as memo gets. */
function records(n: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      id: i,
      name: `user${i}`,
      twelve_chars: "abcdefghijkl".slice(0, i % 13),
      thirteen_char: "abcdefghijklm",
      short_utf8: i % 3 === 0 ? "é" : "ü€",
      "10": i,
      "": null,
      score: i / 7,
      active: i % 2 === 0,
      ninth: "x".repeat(i % 20),
      tenth: [i],
    });
  }
  return out;
}

describe("decoder record fast paths", () => {
  it("decodes thousands of records with mixed string lengths and more keys than the unrolled stores", () => {
    const v = records(3000);
    const back = decode(encode(v)) as Record<string, unknown>[];
    expect(back).toEqual(v);
    expect(Object.keys(back[5]!)).toEqual(Object.keys(v[5]!));
  });

  it("keeps a memoized __proto__ key an own property in every record", () => {
    const v = Array.from({ length: 50 }, (_, i) => {
      const o: Record<string, unknown> = { a: i };
      Object.defineProperty(o, "__proto__", {
        value: i,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      o.b = i;
      return o;
    });
    const back = decode(encode(v)) as Record<string, unknown>[];
    for (let i = 0; i < back.length; i++) {
      expect(Object.getPrototypeOf(back[i])).toBe(Object.prototype);
      expect(Object.getOwnPropertyDescriptor(back[i], "__proto__")?.value).toBe(i);
      expect(Object.keys(back[i]!)).toEqual(["a", "__proto__", "b"]);
    }
    expect(({} as Record<string, unknown>).a).toBeUndefined();
  });

  it("turns a dict into a Map at a non-str key after many str keys", () => {
    const keys = ["k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"];
    const items = keys.flatMap((k, i) => [sbu(k), 0x4b, i]);
    // EMPTY_DICT MARK (nine str keys) BININT1 7 → 'seven' SETITEMS STOP
    const bytes = pk(0x80, 4, 0x7d, 0x28, items, 0x4b, 7, sbu("seven"), 0x75, 0x2e);
    const m = decode(bytes) as Map<unknown, unknown>;
    expect(m).toBeInstanceOf(Map);
    expect([...m.keys()]).toEqual([...keys, 7]);
    expect(m.get(7)).toBe("seven");
  });

  it("reads short strings with bytes past ASCII as UTF-8 and rejects invalid ones", () => {
    expect(decode(pk(0x8c, 2, 0xc3, 0xa9, 0x2e))).toBe("é");
    expect(decode(pk(0x8c, 3, 0xed, 0xa0, 0x80, 0x2e))).toBe("\ud800");
    expect(() => decode(pk(0x8c, 1, 0xff, 0x2e))).toThrow(/can't decode byte 0xff/);
    expect(decode(pk(0x8c, 0, 0x2e))).toBe("");
  });

  it("keeps memoized strs by byte range: re-put, far index, and the memo limit all behave as for values", () => {
    // 'a' put at 0, then a list re-put at 0: the get sees the list
    const reput = decode(pk(0x80, 4, 0x5d, sbu("a"), 0x71, 0, 0x30, 0x5d, 0x71, 0, 0x68, 0, 0x86, 0x2e));
    expect(reput).toEqual([[], []]);
    // a list put at 0, then 'a' re-put at 0: the get sees 'a'
    const back = decode(pk(0x80, 4, 0x5d, 0x71, 0, sbu("a"), 0x71, 0, 0x68, 0, 0x87, 0x2e));
    expect(back).toEqual([[], "a", "a"]);
    // a str at a far index is kept as a value (no huge range table)
    const far = decode(
      pk(0x80, 4, sbu("far"), 0x72, u32(4_000_000_000), 0x6a, u32(4_000_000_000), 0x86, 0x2e),
    );
    expect(far).toEqual(["far", "far"]);
    // ranged entries count towards the memo limit
    const three = pk(0x80, 4, sbu("a"), 0x94, sbu("b"), 0x94, sbu("c"), 0x94, 0x87, 0x2e);
    expect(decode(three, { maxMemo: 3 })).toEqual(["a", "b", "c"]);
    expect(() => decode(three, { maxMemo: 2 })).toThrow(/memo exceeds 2 entries/);
    // a str read back from its range is the same str, also when it is not ASCII
    const utf8 = decode(pk(0x80, 4, 0x8c, 2, 0xc3, 0xa9, 0x94, 0x68, 0, 0x86, 0x2e));
    expect(utf8).toEqual(["é", "é"]);
  });

  describe("dict items read straight into the dict (BINGET key, scalar value … SETITEMS)", () => {
    // [] MEMOIZE(0); 'a' MEMOIZE(1) POP; 'b' MEMOIZE(2) POP: two memoized keys, then the dict under test
    const prelude = [0x80, 4, 0x5d, 0x94, sbu("a"), 0x94, 0x30, sbu("b"), 0x94, 0x30];
    const dict = (...items: unknown[]) => pk(prelude, 0x7d, 0x94, 0x28, items as never, 0x75, 0x2e);

    it("every scalar kind, and a value str memoized for later gets", () => {
      const get = (i: number) => [0x68, i];
      const long1 = [0x8a, 7, 0, 0, 0, 0, 0, 0, 0x06];
      const float = [0x47, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0];
      // memo: the list is 3, the dicts 4, 6 and 7, the str 'x' 5
      const first = [0x7d, 0x94, 0x28, get(1), 0x4d, 0x34, 0x12, get(2), sbu("x"), 0x94, 0x75];
      const second = [0x7d, 0x94, 0x28, get(1), long1, get(2), float, 0x75];
      const third = [0x7d, 0x94, 0x28, get(1), 0x88, get(2), 0x4e, 0x75];
      const v = decode(pk(prelude, 0x5d, 0x94, 0x28, first, second, third, get(5), 0x65, 0x2e));
      expect(v).toEqual([{ a: 0x1234, b: "x" }, { a: 6 * 2 ** 48, b: 1.5 }, { a: true, b: null }, "x"]);
    });

    it("a value that later ops build on (a tuple of a scalar and a memo get) is read by the loop", () => {
      // {'a': (5, 'b')}: BINGET a, BININT1 5, BINGET b, TUPLE2 — the 5 is not the value
      expect(decode(dict(0x68, 1, 0x4b, 5, 0x68, 2, 0x86))).toEqual({ a: [5, "b"] });
      // {'a': 1, 'b': (2,)}: the first pair is simple, the second is not
      expect(decode(dict(0x68, 1, 0x4b, 1, 0x68, 2, 0x4b, 2, 0x85))).toEqual({ a: 1, b: [2] });
    });

    it("a key memoized by a value of the same dict, a memoized scalar, and a BINPUT are left to the loop", () => {
      // {'a': 'c', 'c': 1}: key 'c' is the value str memoized (index 4) inside this dict
      expect(decode(dict(0x68, 1, sbu("c"), 0x94, 0x68, 4, 0x4b, 1))).toEqual({ a: "c", c: 1 });
      // a scalar value memoized, then read back after the dict
      const scalar = pk(prelude, 0x7d, 0x94, 0x28, 0x68, 1, 0x4b, 9, 0x94, 0x75, 0x68, 4, 0x86, 0x2e);
      expect(decode(scalar)).toEqual([{ a: 9 }, 9]);
      // protocol-2 style BINPUT after a value str
      const binput = pk(prelude, 0x7d, 0x94, 0x28, 0x68, 1, sbu("v"), 0x71, 9, 0x75, 0x68, 9, 0x86, 0x2e);
      expect(decode(binput)).toEqual([{ a: "v" }, "v"]);
    });

    it("a key that is not a str, a __proto__ key, or a missing memo entry behave as in the loop", () => {
      // memo 3 holds an int: the dict becomes a Map
      const seven = [0x4b, 7, 0x94, 0x30];
      const intKey = pk(prelude, seven, 0x7d, 0x94, 0x28, [0x68, 1, 0x4b, 1], [0x68, 3, 0x4b, 2], 0x75, 0x2e);
      expect(decode(intKey)).toEqual(
        new Map<unknown, unknown>([
          ["a", 1],
          [7, 2],
        ]),
      );
      const proto = pk(prelude, sbu("__proto__"), 0x94, 0x30, 0x7d, 0x94, 0x28, 0x68, 3, 0x4b, 1, 0x75, 0x2e);
      const d = decode(proto) as Record<string, unknown>;
      expect(Object.getPrototypeOf(d)).toBe(Object.prototype);
      expect(Object.getOwnPropertyDescriptor(d, "__proto__")?.value).toBe(1);
      expect(() => decode(dict(0x68, 1, 0x4b, 1, 0x68, 40, 0x4b, 2))).toThrow(
        /Memo value not found at index 40/,
      );
    });

    it("truncation anywhere inside the items is the usual error", () => {
      const whole = dict(0x68, 1, 0x4a, 1, 2, 3, 4, 0x68, 2, sbu("xyz"), 0x94);
      for (let cut = prelude.flat().length + 3; cut < whole.length - 1; cut++) {
        expect(() => decode(whole.subarray(0, cut)), `cut at ${cut}`).toThrow(
          /pickle data was truncated|Ran out/,
        );
      }
    });
  });
});
