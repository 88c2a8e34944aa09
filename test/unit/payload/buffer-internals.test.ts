// Buffer's undocumented string methods are optional: without them the documented calls give the same strings.
import { Buffer } from "node:buffer";
import { describe, expect, it } from "vitest";
import { stringMethods } from "../../../src/payload/buffer-internals.js";
import { decode, encode } from "../../../src/payload/index.js";

const STRINGS = [
  "k",
  "name",
  "a-thirteen-ch",
  "x".repeat(64),
  "y".repeat(5000),
  "héllo wörld ✓",
  "é".repeat(300),
];

describe("payload/buffer-internals", () => {
  const native = stringMethods(Buffer.prototype);
  const documented = stringMethods({});

  for (const [name, methods] of [
    ["Node's internals", native],
    ["the documented calls (a Node without them)", documented],
  ] as const) {
    it(`cuts and writes strings with ${name}`, () => {
      const buf = Buffer.from("abcdefghijklmnop\xe9", "latin1");
      expect(methods.oneByteString(buf, 2, 17)).toBe("cdefghijklmnop\xe9");
      const out = Buffer.alloc(8);
      expect(methods.writeUtf8(out, "héllo", 1, 7)).toBe(6);
      expect(out.toString("utf8", 1, 7)).toBe("héllo");
      // A string longer than the room is cut at a character's boundary, as buf.write does.
      expect(methods.writeUtf8(Buffer.alloc(3), "éé", 0, 3)).toBe(2);
    });
  }

  it("is what the codec uses: strings of every length round-trip", () => {
    const value = Object.fromEntries(STRINGS.map((s) => [s, s]));
    expect(decode(encode(value))).toEqual(value);
  });
});
