// Hostile payloads (test/fixtures/pickle/hostile.json and our own): each fails cleanly with an error that says
// why, nothing runs, no prototype changes, and bombs stop at a limit instead of eating time or memory.
import { existsSync, readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DeserializeTimeoutError,
  decode,
  isByteArray,
  isTuple,
  PickleError,
  PickleGlobalError,
} from "../../../src/payload/index.js";
import { pk, sbu, u32 } from "./bytes.js";

interface Hostile {
  name: string;
  b64: string;
  note: string;
}
const hostile = (
  JSON.parse(readFileSync(new URL("../../fixtures/pickle/hostile.json", import.meta.url), "utf8")) as {
    vectors: Hostile[];
  }
).vectors;
const byName = new Map(hostile.map((h) => [h.name, Buffer.from(h.b64, "base64")]));
const load = (name: string): Uint8Array => {
  const b = byName.get(name);
  if (b === undefined) throw new Error(`no hostile vector ${name}`);
  return b;
};

const protoSnapshot = (): string =>
  JSON.stringify(
    [Object.prototype, Function.prototype, Array.prototype, Map.prototype, Set.prototype].map((p) =>
      Object.getOwnPropertyNames(p).sort(),
    ),
  );

let before = "";
beforeEach(() => {
  before = protoSnapshot();
});
afterEach(() => {
  // no prototype gained or lost a property, and nothing leaked onto fresh objects
  expect(protoSnapshot()).toBe(before);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(existsSync("pickle-marker-1") || existsSync("pickle-marker-2")).toBe(false);
});

describe("hostile.json: globals are refused by name", () => {
  const refused: [string, string][] = [
    ["os_system_reduce_p2", "posix.system"],
    ["eval_reduce_p2", "__builtin__.eval"],
    ["os_system_reduce_p5", "posix.system"],
    ["eval_reduce_p5", "builtins.eval"],
    ["cloudpickle_lambda", "cloudpickle.cloudpickle._make_function"],
    ["cloudpickle_closure", "cloudpickle.cloudpickle._make_function"],
    ["cloudpickle_local_class_instance", "cloudpickle.cloudpickle._make_skeleton_class"],
    ["pickle_class_instance", "__main__.Plain"],
    ["function_by_ref", "posixpath.join"],
    ["datetime", "datetime.datetime"],
    ["decimal", "decimal.Decimal"],
    ["complex", "builtins.complex"],
    ["ordered_dict", "collections.OrderedDict"],
    ["proto_pollution_build", "builtins.object"],
    ["setstate_call", "os.system"],
  ];
  for (const [name, global] of refused) {
    it(`${name} → refuses ${global}`, () => {
      let err: unknown;
      try {
        decode(load(name));
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PickleGlobalError);
      expect((err as Error).message).toContain(`'${global}'`);
      expect((err as Error).message).toMatch(/only decodes plain data/);
    });
  }
});

describe("hostile.json: malformed streams fail with the reason", () => {
  const failing: [string, RegExp][] = [
    ["oob_buffer_p5", /out-of-band buffers/],
    ["oob_buffer_p5_real", /out-of-band buffers/],
    ["reduce_non_callable", /REDUCE can only apply an allow-listed global/],
    ["huge_len_unicode", /pickle data was truncated/],
    ["truncated", /pickle data was truncated/],
    ["no_stop", /^Ran out of input$/],
    ["proto6", /unsupported pickle protocol: 6/],
    ["bad_opcode", /invalid load key, '\\xff'/],
    ["get_missing_memo", /Memo value not found at index 7/],
  ];
  for (const [name, re] of failing) {
    it(`${name} → ${re.source}`, () => {
      expect(() => decode(load(name))).toThrow(re);
      expect(() => decode(load(name))).toThrow(PickleError);
    });
  }

  it("covers every vector of hostile.json in one of the groups", () => {
    expect(hostile.length).toBe(29);
  });
});

describe("hostile.json: plain data in disguise decodes as data, as Python would", () => {
  it("set_p2 is builtins.set applied by the allow-list table", () => {
    expect(decode(load("set_p2"))).toEqual(new Set([1, 2]));
  });
  it("bytes_p2 is _codecs.encode(latin-1) → bytes", () => {
    const v = decode(load("bytes_p2"));
    expect(v).toEqual(new Uint8Array([0, 255]));
    expect(isByteArray(v)).toBe(false);
  });
  it("appends_200k: one APPENDS with 200k items is bounded and does not overflow the stack", () => {
    const v = decode(load("appends_200k")) as number[];
    expect(v.length).toBe(200_000);
    expect(v.every((x) => x === 1)).toBe(true);
  });
  it("proto_pollution_setitems: __proto__ and constructor stay own keys; the dict's prototype is Object.prototype", () => {
    const v = decode(load("proto_pollution_setitems")) as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v).sort()).toEqual(["__proto__", "constructor"]);
    expect(Object.getOwnPropertyDescriptor(v, "__proto__")?.value).toEqual({ polluted: true });
    expect((v as { polluted?: unknown }).polluted).toBeUndefined();
  });
  it("trailing_garbage: bytes after STOP are ignored, like pickle.loads", () => {
    expect(decode(load("trailing_garbage"))).toBe(1);
  });
});

describe("own hostile payloads", () => {
  it("a TUPLE1 chain nesting 100k deep stops at the depth limit", () => {
    const chain = new Array<number>(100_000).fill(0x85);
    expect(() => decode(pk(0x80, 5, 0x4e, chain, 0x2e))).toThrow(/nests deeper than 2000 levels/);
  });

  it("lists nested 5000 deep through APPEND stop at the depth limit", () => {
    const n = 5000;
    expect(() => decode(pk(0x80, 5, new Array(n).fill(0x5d), new Array(n - 1).fill(0x61), 0x2e))).toThrow(
      /nests deeper/,
    );
  });

  it("nesting up to the limit still decodes, to what pickle.loads gives: 1500 one-tuples around None", () => {
    const chain = new Array<number>(1500).fill(0x85);
    let value = decode(pk(0x80, 5, 0x4e, chain, 0x2e));
    let depth = 0;
    while (isTuple(value)) {
      expect(value).toHaveLength(1);
      value = (value as unknown[])[0];
      depth++;
    }
    expect([depth, value]).toStrictEqual([1500, null]);
  });

  it("set() applied again and again to one memoized 100k list stops at the copy budget", () => {
    const items: number[] = [];
    for (let i = 0; i < 1000; i++) items.push(0x4b, 1);
    const oneBatch = [0x28, ...items, 0x65];
    const batches = new Array(100).fill(oneBatch).flat();
    const rounds: number[] = [];
    // BINGET 0 (the global), BINGET 1 (the list), TUPLE1, REDUCE, POP
    for (let i = 0; i < 1000; i++) rounds.push(0x68, 0, 0x68, 1, 0x85, 0x52, 0x30);
    const bytes = pk(
      0x80,
      2,
      "c__builtin__\nset\n",
      0x71,
      0,
      0x30,
      0x5d,
      0x71,
      1,
      batches,
      0x30,
      rounds,
      0x4e,
      0x2e,
    );
    expect(() => decode(bytes)).toThrow(/expands beyond/);
  });

  it("a clock past the deadline stops the decoder with the interface document's message", () => {
    let t = 0;
    const now = (): number => {
      t += 5000; // every clock read is five seconds later
      return t;
    };
    const items = new Array(300_000).fill([0x4b, 1]).flat();
    const bytes = pk(0x80, 5, 0x5d, 0x28, items, 0x65, 0x2e);
    let err: unknown;
    try {
      decode(bytes, { now });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DeserializeTimeoutError);
    expect((err as Error).message).toBe("Deserialization timed out after 30s");
  });

  it("the memo limit is enforced", () => {
    const puts = new Array(100).fill([0x4e, 0x94, 0x30]).flat();
    expect(() => decode(pk(0x80, 5, puts, 0x4e, 0x2e), { maxMemo: 50 })).toThrow(/memo exceeds 50 entries/);
  });

  it("a huge LONG4 or BINBYTES8 length is truncation, not an allocation", () => {
    expect(() => decode(pk(0x80, 5, 0x8b, u32(0x7fffffff), 0x2e))).toThrow(/truncated/);
    expect(() => decode(pk(0x80, 5, 0x8e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x2e))).toThrow(
      /truncated/,
    );
    expect(() => decode(pk(0x80, 5, 0x95, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0x4e, 0x2e))).toThrow(
      /truncated/,
    );
  });

  it("names that exist on Object.prototype are not in the allow-list", () => {
    for (const name of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(() => decode(pk(0x80, 5, sbu("builtins"), sbu(name), 0x93, 0x2e))).toThrow(PickleGlobalError);
      expect(() => decode(pk(0x80, 5, sbu(name), sbu("set"), 0x93, 0x2e))).toThrow(PickleGlobalError);
    }
  });

  it("an allow-listed global used as a value (not called) is refused", () => {
    expect(() => decode(pk(0x80, 5, sbu("builtins"), sbu("set"), 0x93, 0x2e))).toThrow(/as a value/);
    expect(() => decode(pk(0x80, 5, 0x5d, sbu("builtins"), sbu("set"), 0x93, 0x61, 0x2e))).toThrow(
      /as a value/,
    );
  });

  it("INST, OBJ, NEWOBJ, BUILD, PERSID, EXT and NEXT_BUFFER never build anything", () => {
    expect(() => decode(pk("(ios\nsystem\nS'echo x'\n."))).toThrow(/'os.system'/);
    expect(() => decode(pk(0x80, 5, 0x7d, 0x7d, 0x62, 0x2e))).toThrow(/BUILD builds an object/);
    expect(() => decode(pk(0x80, 5, 0x28, 0x29, 0x6f, 0x2e))).toThrow(/OBJ builds an object/);
    expect(() => decode(pk(0x80, 5, sbu("builtins"), sbu("set"), 0x93, 0x29, 0x81, 0x2e))).toThrow(
      /NEWOBJ builds an object of builtins.set/,
    );
    expect(() => decode(pk("Pabc\n."))).toThrow(/persistent IDs/);
    expect(() => decode(pk(0x80, 2, 0x82, 1, 0x2e))).toThrow(/extension codes/);
    expect(() => decode(pk(0x80, 5, 0x97, 0x2e))).toThrow(/out-of-band/);
  });

  it("containers only take the items their Python type takes", () => {
    expect(() => decode(pk(0x80, 5, 0x5d, 0x4b, 1, 0x4b, 2, 0x73, 0x2e))).toThrow(/SETITEM on a list/);
    expect(() => decode(pk(0x80, 5, 0x29, 0x4b, 1, 0x61, 0x2e))).toThrow(/APPEND on a tuple/);
    expect(() => decode(pk(0x80, 5, 0x28, 0x91, 0x28, 0x4b, 1, 0x90, 0x2e))).toThrow(
      /ADDITEMS on a set|only a set/,
    );
    expect(() => decode(pk(0x80, 5, 0x7d, 0x28, 0x4b, 1, 0x75, 0x2e))).toThrow(/odd number of items/);
  });

  it("nothing below a MARK is reachable", () => {
    // as in CPython, APPEND after a MARK cannot reach the list below it
    expect(() => decode(pk(0x80, 5, 0x5d, 0x28, 0x4b, 1, 0x61, 0x2e))).toThrow(/^unexpected MARK found$/);
    // APPENDS after the MARK reaches it: pickle.loads gives [1]
    expect(decode(pk(0x80, 5, 0x5d, 0x28, 0x4b, 1, 0x65, 0x2e))).toStrictEqual([1]);
    expect(() => decode(pk(0x80, 5, 0x65, 0x2e))).toThrow(/could not find MARK/);
    expect(() => decode(pk(0x80, 5, 0x2e))).toThrow(/stack underflow/);
    expect(() => decode(new Uint8Array(0))).toThrow(/Ran out of input/);
  });
});
