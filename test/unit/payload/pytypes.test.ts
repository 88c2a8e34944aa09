// Declared Python types of remote functions: parsing, argument conversion ("in") and return conversion ("out").
import { describe, expect, it } from "vitest";
import {
  bytearray,
  convert,
  formatPyType,
  frozenset,
  isFrozenSet,
  isPyFloat,
  isTuple,
  PyFloat,
  parsePyType,
  tuple,
} from "../../../src/payload/index.js";
import { missingArgumentsMessage, parameterNames } from "../../../src/payload/signature.js";
import { pythonTypeName } from "../../../src/payload/values.js";

describe("parsePyType", () => {
  it("reads Python annotations and writes them back", () => {
    for (const t of [
      "float",
      "list[float]",
      "dict[str, list[int]]",
      "tuple[int, str]",
      "tuple[float, ...]",
      "float | None",
      "frozenset[int]",
      "set[str] | list[str]",
      "any",
    ])
      expect(formatPyType(parsePyType(t))).toBe(t);
    expect(formatPyType(parsePyType("Optional[int]"))).toBe("int | None");
    expect(formatPyType(parsePyType({ mean: "float", count: "int" }))).toBe("{'mean': float, 'count': int}");
  });

  it("refuses what it cannot read, quoting it", () => {
    expect(() => parsePyType("flaot")).toThrow(`cannot read the type "flaot": unknown type 'flaot'`);
    expect(() => parsePyType("list[int")).toThrow("expected ',' or ']' after an argument of list");
    expect(() => parsePyType("dict[str]")).toThrow("dict[...] takes 2 types, got 1");
    expect(() => parsePyType("int]")).toThrow(`unexpected ']'`);
    expect(() => parsePyType("list[int, ...]")).toThrow("'...' is only allowed in tuple[X, ...]");
  });
});

describe("convert", () => {
  const out = (v: unknown, t: string) => convert(v, parsePyType(t), "out", "return value");
  const into = (v: unknown, t: string) => convert(v, parsePyType(t), "in", "argument 'x'");

  it("declared float returns are floats even when whole; ints accepted where floats are declared", () => {
    const r = out([1, 0.5, 2n], "list[float]") as unknown[];
    expect(r.map((x) => [isPyFloat(x), Number(x)])).toEqual([
      [true, 1],
      [true, 0.5],
      [true, 2],
    ]);
    expect(out(new PyFloat(3), "int")).toBe(3);
    expect(() => out(1.5, "int")).toThrow("return value must be int, not float");
  });

  it("arguments: floats are plain numbers, mismatches name the path", () => {
    expect(into(new PyFloat(2), "float")).toBe(2);
    expect(into(3n, "float")).toBe(3);
    expect(() => into([1, "a"], "list[float]")).toThrow("argument 'x'[1] must be float, not str");
    expect(() => into({ a: [1] }, "dict[str, list[str]]")).toThrow(
      "argument 'x'['a'][0] must be str, not int",
    );
    expect(() => into(tuple(1), "tuple[int, int]")).toThrow(
      "argument 'x' must be tuple[int, int], not tuple",
    );
    expect(into(null, "float | None")).toBe(null);
  });

  it("copies containers with their Python tags kept, and records convert only their declared fields", () => {
    const t = out(tuple(1, 2), "tuple[float, ...]");
    expect(isTuple(t)).toBe(true);
    const s = out(frozenset([1]), "frozenset[float]") as Set<unknown>;
    expect(isFrozenSet(s)).toBe(true);
    const rec = out({ mean: 2, count: 3, note: "x" }, "dict[str, any]") as Record<string, unknown>;
    expect(rec).toEqual({ mean: 2, count: 3, note: "x" });
    const typed = convert(
      { mean: 2, count: 3 },
      parsePyType({ mean: "float" }),
      "out",
      "return value",
    ) as Record<string, unknown>;
    expect(isPyFloat(typed.mean)).toBe(true);
    expect(typed.count).toBe(3);
    const m = out(new Map([[tuple(1, 2), 1]]), "dict[tuple[int, int], float]") as Map<unknown, unknown>;
    expect(isPyFloat([...m.values()][0])).toBe(true);
  });

  it("keeps a `__proto__` key as data in dicts and records, never as the copy's prototype", () => {
    const dict = JSON.parse('{"__proto__": 1, "b": 2}') as Record<string, unknown>;
    const copied = into(dict, "dict[str, float]") as Record<string, unknown>;
    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
    expect(Object.keys(copied)).toEqual(["__proto__", "b"]);
    expect(Object.getOwnPropertyDescriptor(copied, "__proto__")?.value).toBe(1);
    const record = convert(dict, parsePyType({ b: "float" }), "out", "return value") as object;
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    expect(Object.keys(record)).toEqual(["__proto__", "b"]);
  });

  it("a recursive value cannot be converted, and says so", () => {
    const a: unknown[] = [];
    a.push(a);
    expect(() => out(a, "list[list[any]]")).toThrow(
      "return value[0] must be list[any] without cycles, not a recursive value",
    );
  });
});

describe("pythonTypeName", () => {
  it("names values as the encoder sends them", () => {
    expect(
      [
        1,
        1.5,
        2n,
        "s",
        true,
        null,
        new PyFloat(1),
        bytearray([1]),
        new Uint8Array(1),
        tuple(),
        [],
        new Map(),
        {},
      ].map(pythonTypeName),
    ).toEqual([
      "int",
      "float",
      "int",
      "str",
      "bool",
      "None",
      "float",
      "bytearray",
      "bytes",
      "tuple",
      "list",
      "dict",
      "dict",
    ]);
    expect(pythonTypeName(new Date())).toBe("a JS Date");
  });
});

describe("parameterNames", () => {
  it("reads arrows, functions, methods, classes and defaults holding commas and brackets", () => {
    expect(parameterNames((a: number, b: number) => a + b)).toEqual(["a", "b"]);
    expect(parameterNames(async (x: unknown) => x)).toEqual(["x"]);
    expect(
      parameterNames(function named(p: string, q = "(,)", ...rest: unknown[]) {
        return [p, q, rest];
      }),
    ).toEqual(["p", "q"]);
    class C {
      constructor(
        readonly start: number,
        readonly opts = { a: [1, 2] },
      ) {}
      method(by = 1) {
        return by;
      }
    }
    expect(parameterNames(C)).toEqual(["start", "opts"]);
    expect(parameterNames(C.prototype.method)).toEqual(["by"]);
    expect(parameterNames(({ a }: { a: number }, b: number) => a + b)).toEqual([undefined, "b"]);
  });

  it("words missing arguments as CPython does", () => {
    expect(missingArgumentsMessage("f", ["b"])).toBe("f() missing 1 required positional argument: 'b'");
    expect(missingArgumentsMessage("f", ["a", "b"])).toBe(
      "f() missing 2 required positional arguments: 'a' and 'b'",
    );
    expect(missingArgumentsMessage("f", ["a", "b", "c"])).toBe(
      "f() missing 3 required positional arguments: 'a', 'b', and 'c'",
    );
  });
});
