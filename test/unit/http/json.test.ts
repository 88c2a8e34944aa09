// The one JSON depth check (src/http/json.ts): it agrees with the parsed value's real depth on generated JSON,
// skips brackets inside strings however they are escaped, stops at the first level past the limit, and refuses
// before JSON.parse builds anything.
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { isFlashError } from "../../../src/flash-error.js";
import { JsonTooDeepError, jsonCost, MAX_JSON_DEPTH, parseJson, scanJson } from "../../../src/http/json.js";

/** The oracle: nesting of a parsed value, the value itself counting as one level when it is an array or object. */
function depthOf(value: unknown): number {
  if (typeof value !== "object" || value === null) return 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  return 1 + children.reduce<number>((max, child) => Math.max(max, depthOf(child)), 0);
}

/** The smallest limit a text passes: found with the scan alone. */
function scannedDepth(text: string): number {
  let limit = 0;
  while (scanJson(text, limit).tooDeepAt >= 0) limit++;
  return limit;
}

const nested = (levels: number, inner = "1"): string => "[".repeat(levels) + inner + "]".repeat(levels);

afterEach(() => vi.restoreAllMocks());

describe("scanJson", () => {
  it("measures the depth JSON.parse's value has, on generated JSON with tricky strings", () => {
    const tricky = fc.oneof(
      fc.string(),
      fc.constantFrom('"', "\\", '\\"', "[[[", "{{", "]}", '\\\\"[', "\u2028"),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.oneof(tricky, fc.integer(), fc.boolean(), fc.constant(null)),
        fc.array(tie("node"), { maxLength: 4 }),
        fc.dictionary(tricky, tie("node"), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, fc.constantFrom(0, 2), (v, indent) => {
        const text = JSON.stringify(v, null, indent);
        expect(scannedDepth(text)).toBe(depthOf(JSON.parse(text)));
      }),
      { numRuns: 500 },
    );
  });

  it("skips strings whose quotes are escaped behind runs of backslashes", () => {
    const text = JSON.stringify({ a: '\\"[[[', b: "\\\\", c: ['x\\\\\\"{{'] });
    expect(scannedDepth(text)).toBe(2);
  });

  it("stops at the first array or object past the limit, however long the text", () => {
    const text = "[".repeat(5_000_000);
    expect(scanJson(text, 100)).toStrictEqual({ tooDeepAt: 100, containers: 100, elements: 0 });
    expect(scanJson(nested(MAX_JSON_DEPTH)).tooDeepAt).toBe(-1);
    expect(scanJson(nested(MAX_JSON_DEPTH + 1)).tooDeepAt).toBe(MAX_JSON_DEPTH);
    // Wide is not deep: a million siblings at level 2.
    const wide = `[${"[],".repeat(1_000_000)}[]]`;
    expect(scanJson(wide, 2)).toStrictEqual({ tooDeepAt: -1, containers: 1_000_002, elements: 1_000_000 });
  });

  it("counts the containers and elements the cost estimate charges for", () => {
    const text = '{"a": [1, 2, {"b": null}], "c": "x,y:[z]"}';
    const shape = scanJson(text);
    expect(shape).toStrictEqual({ tooDeepAt: -1, containers: 3, elements: 6 });
    expect(jsonCost(text.length, shape)).toBe(text.length + 3 * 64 + 6 * 8);
    // A big string costs its length: nothing inside it is counted.
    const blob = JSON.stringify({ input: "[{,:}]".repeat(100_000) });
    expect(jsonCost(blob.length, scanJson(blob))).toBe(blob.length + 64 + 8);
  });
});

describe("parseJson", () => {
  it("refuses a text deeper than the limit before JSON.parse builds anything", () => {
    const parse = vi.spyOn(JSON, "parse");
    const text = `{"input": ${nested(MAX_JSON_DEPTH)}}`;
    let error: unknown;
    try {
      parseJson(text);
    } catch (err) {
      error = err;
    }
    expect(parse).not.toHaveBeenCalled();
    expect(isFlashError(error, "JSON_TOO_DEEP")).toBe(true);
    expect((error as JsonTooDeepError).message).toBe(
      `JSON nests deeper than ${MAX_JSON_DEPTH} levels, the limit (level ${MAX_JSON_DEPTH + 1} opens at character ${10 + MAX_JSON_DEPTH - 1})`,
    );
  });

  it("parses what fits, and leaves malformed text to JSON.parse's SyntaxError", () => {
    expect(parseJson(`{"input": ${nested(MAX_JSON_DEPTH - 1)}}`)).toBeTypeOf("object");
    expect(parseJson(nested(3), 3)).toStrictEqual([[[1]]]);
    expect(() => parseJson(nested(4), 3)).toThrow(JsonTooDeepError);
    expect(() => parseJson('{"a": [1,')).toThrow(SyntaxError);
  });
});
