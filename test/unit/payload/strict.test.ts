// The decoder refuses what CPython's pickle.loads refuses, in CPython's words, and loads what it loads: each
// expectation here is what CPython 3.11 answered for the same bytes (the differential test checks at random).
import { describe, expect, it } from "vitest";
import { decodeGeneral } from "../../../src/payload/decode.js";
import { decode, encode, frozenset, PickleError, PyFloat, tuple } from "../../../src/payload/index.js";
import { pk } from "./bytes.js";
import { mutate, records } from "./mutate.js";

const both = [decode, decodeGeneral];
const refuses = (bytes: Uint8Array, message: string): void => {
  for (const fn of both) {
    let err: unknown;
    try {
      fn(bytes);
    } catch (e) {
      err = e;
    }
    expect(err, `${fn.name} of ${Buffer.from(bytes).toString("hex")}`).toBeInstanceOf(PickleError);
    expect((err as Error).message).toBe(message);
  }
};
const loads = (bytes: Uint8Array, value: unknown): void => {
  for (const fn of both) expect(fn(bytes), fn.name).toEqual(value);
};

describe("as strict as CPython", () => {
  it("the issue's counterexample: records(6) with a 0 inserted and a byte deleted is an odd DICT", () => {
    const base = encode(records(6));
    const bytes = mutate(base, [
      { kind: "insert", at: 1089506239, byte: 0 },
      { kind: "delete", at: 773594805 },
    ]);
    refuses(bytes, "odd number of items for DICT");
  });

  it("odd item counts for DICT and SETITEMS", () => {
    refuses(pk("}(K\x01d."), "odd number of items for DICT");
    refuses(pk(0x80, 5, "}(K\x01K\x02K\x03u."), "odd number of items for SETITEMS");
  });

  it("unhashable dict keys and set members name their type", () => {
    refuses(pk("(}K\x01d."), "unhashable type: 'dict'");
    refuses(pk("(]K\x01d."), "unhashable type: 'list'");
    refuses(pk(0x80, 5, "}", 0x8f, "K\x01s."), "unhashable type: 'set'");
    refuses(pk(0x80, 5, "}(", 0x96, 1, 0, 0, 0, 0, 0, 0, 0, "xK\x02u."), "unhashable type: 'bytearray'");
    refuses(pk(0x80, 5, 0x8f, "(]", 0x90, "."), "unhashable type: 'list'");
    refuses(pk(0x80, 5, "(K\x01}", 0x91, "."), "unhashable type: 'dict'");
    // a tuple is hashable only when everything in it is
    refuses(pk(0x80, 5, "}K\x01]", 0x86, "K\x02s."), "unhashable type: 'list'");
    refuses(pk(0x80, 2, "c__builtin__\nset\n]]a", 0x85, "R."), "unhashable type: 'list'");
  });

  it("hashable keys of every kind still load", () => {
    const m = decode(pk(0x80, 5, "}(K\x01K\x02", 0x86, "N(", 0x91, "K\x03u.")) as Map<unknown, unknown>;
    expect([...m.entries()]).toEqual([
      [tuple(1, 2), null],
      [frozenset(), 3],
    ]);
  });

  it("stack underflow, and reaching below an open MARK", () => {
    refuses(pk(0x80, 5, "."), "unpickling stack underflow");
    refuses(pk("K\x010."), "unpickling stack underflow");
    refuses(pk("K\x01(."), "unexpected MARK found");
    refuses(pk("K\x01(", 0x85, "."), "unexpected MARK found");
    refuses(pk("e."), "could not find MARK");
  });

  it("input that ends where an opcode should start ran out; inside an argument it was truncated", () => {
    refuses(new Uint8Array(0), "Ran out of input");
    refuses(pk(0x80, 5, "K\x01"), "Ran out of input");
    refuses(pk(0x80, 5, "J\x01"), "pickle data was truncated");
    refuses(pk("I\n."), "pickle data was truncated");
  });

  it("what CPython loads: an open MARK, item-less APPENDS / SETITEMS / ADDITEMS on anything, leftover stack", () => {
    loads(pk("(K\x01."), 1);
    loads(pk("K\x01(e."), 1);
    loads(pk("K\x01(u."), 1);
    loads(pk("K\x01", 0x8f, "(", 0x90, "."), new Set());
    loads(pk("K\x01K\x02."), 2);
    // an allow-listed global left unused on the stack is no part of the value
    loads(pk(0x80, 2, "c__builtin__\nbytes\nq\x00)q\x01."), tuple());
  });

  it("an uncalled global in the value is still refused", () => {
    refuses(
      pk(0x80, 2, "]c__builtin__\nset\na."),
      "the pickle uses a global (set, bytes, …) as a value instead of calling it",
    );
  });

  it("Python 2's __builtin__ is builtins below protocol 3 only", () => {
    loads(pk(0x80, 2, "c__builtin__\nset\n)R."), new Set());
    expect(() => decode(pk(0x80, 3, "c__builtin__\nset\n)R."))).toThrow(/refusing global '__builtin__.set'/);
  });

  it("protocol-0 INT, LONG and FLOAT lines read as C reads them", () => {
    loads(pk("I01\n."), true);
    loads(pk("I 1\n."), true);
    loads(pk("I1\x00\n."), true);
    loads(pk("I0 \n."), 0);
    loads(pk("I07\n."), 7);
    loads(pk("I1_0\n."), 10);
    loads(pk("I0o17\n."), 15);
    loads(pk("I0x1f\n."), 31);
    refuses(pk("I \n."), "could not convert string to int");
    refuses(pk("L007L\n."), "invalid literal for int() with base 0: '007'");
    refuses(pk("L0x\n."), "invalid literal for int() with base 16: '0x\\n'");
    refuses(pk("L1__0\n."), "invalid literal for int() with base 10: '1__0\\n'");
    loads(pk("F1.5\x00zz\n."), 1.5);
    loads(pk("F5.\n."), new PyFloat(5));
    refuses(pk("F1e999\n."), "value too large to convert to float: '1e999\n'");
    refuses(pk("F 1.5\n."), "could not convert string to float: ' 1.5\n'");
    refuses(pk("F1.5 \n."), "could not convert string to float");
  });

  it("text strings: raw-unicode-escape reads backslashes in pairs; STRING refuses a trailing backslash", () => {
    loads(pk("V\\\\\\\\u0041\n."), "\\\\\\\\u0041");
    loads(pk("V\\u0041\n."), "A");
    refuses(pk("S'a\\'\n."), "Trailing \\ in string");
    refuses(pk("S'a\\xZZ'\n."), "invalid \\x escape at position 1");
  });

  it("codec names go through codecs.lookup's normalization and aliases", () => {
    const str = (s: string) => [0x8c, Buffer.byteLength(s), Buffer.from(s)];
    const enc = (name: string) => pk(0x80, 2, "c_codecs\nencode\n", str("\u00e9"), str(name), 0x86, "R.");
    for (const name of ["latin1", "Latin-1", "latin", "L1", "iso8859.1", "latin1\u009c"])
      loads(enc(name), new Uint8Array([0xe9]));
    loads(enc("utf8"), new Uint8Array([0xc3, 0xa9]));
    refuses(
      enc("ascii"),
      "'ascii' codec can't encode character '\\xe9' in position 0: ordinal not in range(128)",
    );
  });

  it("invalid load keys are quoted as CPython quotes them", () => {
    refuses(pk("'"), "invalid load key, '\\x27'.");
    refuses(pk("\\"), "invalid load key, '\\x5c'.");
    refuses(pk("z"), "invalid load key, 'z'.");
  });
});
