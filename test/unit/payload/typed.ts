// The typed expected-value format of the vector files (dependencies.md §2.1) and helpers around it:
// compare a decoded JS value against it, build the JS value it describes, describe a JS value in it.
import {
  asFrozenSet,
  asTuple,
  bytearray,
  isByteArray,
  isFrozenSet,
  isTuple,
  PyFloat,
} from "../../../src/payload/index.js";

export type Typed =
  | { t: "none" }
  | { t: "bool"; v: boolean }
  | { t: "int"; v: string }
  | { t: "float"; v: string }
  | { t: "str"; v: string }
  | { t: "bytes" | "bytearray"; b64: string }
  | { t: "list" | "tuple" | "set" | "frozenset"; id: number; v: Typed[] }
  | { t: "dict"; id: number; v: [Typed, Typed][] }
  | { t: "ref"; id: number };

export interface VectorFile {
  info: Record<string, unknown>;
  vectors: {
    name: string;
    expected: Typed;
    payloads: { producer: string; protocol: number | string; b64: string }[];
  }[];
}

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The JS number a float repr stands for. */
export function floatOf(repr: string): number {
  if (repr === "nan") return Number.NaN;
  if (repr === "inf") return Number.POSITIVE_INFINITY;
  if (repr === "-inf") return Number.NEGATIVE_INFINITY;
  return Number(repr);
}

const integralSafe = (x: number): boolean =>
  Number.isInteger(x) && Math.abs(x) <= Number.MAX_SAFE_INTEGER && !Object.is(x, -0);

function sameBytes(a: Uint8Array, b64: string): boolean {
  return Buffer.from(a).equals(Buffer.from(b64, "base64"));
}

/** Returns null when `actual` is what `expected` describes (types, values, sharing), else where it differs. */
export function mismatch(
  expected: Typed,
  actual: unknown,
  ids = new Map<number, unknown>(),
  path = "$",
): string | null {
  const bad = (why: string): string => `${path}: ${why} (expected ${expected.t}, got ${describe(actual)})`;
  switch (expected.t) {
    case "none":
      return actual === null ? null : bad("not null");
    case "bool":
      return actual === expected.v ? null : bad("wrong bool");
    case "int": {
      const v = BigInt(expected.v);
      if (v >= -SAFE && v <= SAFE)
        return typeof actual === "number" && actual === Number(v) ? null : bad("wrong int");
      return typeof actual === "bigint" && actual === v ? null : bad("wrong bigint");
    }
    case "float": {
      const x = floatOf(expected.v);
      if (integralSafe(x))
        return actual instanceof PyFloat && actual.value === x ? null : bad("want PyFloat");
      if (typeof actual !== "number") return bad("not a number");
      return Object.is(actual, x) ? null : bad(`wrong float ${String(actual)}`);
    }
    case "str":
      return actual === expected.v ? null : bad("wrong str");
    case "bytes":
      return actual instanceof Uint8Array && !isByteArray(actual) && sameBytes(actual, expected.b64)
        ? null
        : bad("bytes");
    case "bytearray":
      return isByteArray(actual) && sameBytes(actual as Uint8Array, expected.b64) ? null : bad("bytearray");
    case "ref":
      return ids.has(expected.id) && ids.get(expected.id) === actual
        ? null
        : bad(`not the same object as #${expected.id}`);
    case "list":
    case "tuple": {
      if (!Array.isArray(actual)) return bad("not an array");
      if (isTuple(actual) !== (expected.t === "tuple")) return bad("tuple/list tag");
      if (expected.t === "tuple" && !Object.isFrozen(actual)) return bad("tuple not frozen");
      if (expected.id >= 0) ids.set(expected.id, actual);
      if (actual.length !== expected.v.length) return bad(`length ${actual.length}`);
      for (let i = 0; i < actual.length; i++) {
        const m = mismatch(expected.v[i]!, actual[i], ids, `${path}[${i}]`);
        if (m) return m;
      }
      return null;
    }
    case "set":
    case "frozenset": {
      if (!(actual instanceof Set)) return bad("not a Set");
      if (isFrozenSet(actual) !== (expected.t === "frozenset")) return bad("frozenset tag");
      ids.set(expected.id, actual);
      if (actual.size !== expected.v.length) return bad(`size ${actual.size}`);
      // Python may iterate a set in another order than it was built: match in order first, then search
      const items = [...actual];
      const used = new Set<number>();
      for (let i = 0; i < expected.v.length; i++) {
        const e = expected.v[i]!;
        let found = -1;
        if (!used.has(i) && mismatch(e, items[i], new Map(ids), path) === null) found = i;
        else found = items.findIndex((a, j) => !used.has(j) && mismatch(e, a, new Map(ids), path) === null);
        if (found < 0) return bad(`no element matches ${JSON.stringify(e).slice(0, 80)}`);
        used.add(found);
        mismatch(e, items[found], ids, path);
      }
      return null;
    }
    case "dict": {
      const allStr = expected.v.every(([k]) => k.t === "str");
      if (allStr) {
        if (
          typeof actual !== "object" ||
          actual === null ||
          Object.getPrototypeOf(actual) !== Object.prototype
        ) {
          return bad("not a plain object");
        }
        ids.set(expected.id, actual);
        const keys = Object.keys(actual);
        if (keys.length !== expected.v.length) return bad(`${keys.length} keys`);
        for (const [k, v] of expected.v) {
          const key = (k as { v: string }).v;
          const d = Object.getOwnPropertyDescriptor(actual, key);
          if (d === undefined) return bad(`missing key ${JSON.stringify(key)}`);
          const m = mismatch(v, d.value, ids, `${path}.${key}`);
          if (m) return m;
        }
        return null;
      }
      if (!(actual instanceof Map)) return bad("not a Map");
      ids.set(expected.id, actual);
      if (actual.size !== expected.v.length) return bad(`size ${actual.size}`);
      let i = 0;
      for (const [k, v] of actual) {
        const [ek, ev] = expected.v[i]!;
        const m = mismatch(ek, k, ids, `${path}<key ${i}>`) ?? mismatch(ev, v, ids, `${path}<value ${i}>`);
        if (m) return m;
        i++;
      }
      return null;
    }
  }
}

export function describe(v: unknown): string {
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v !== "object" || v === null) return `${typeof v} ${String(v).slice(0, 40)}`;
  return v.constructor?.name ?? "object";
}

/** Builds the JS value a typed tree describes, with the mapping of src/payload/index.ts. */
export function fromTyped(t: Typed, ids = new Map<number, unknown>()): unknown {
  switch (t.t) {
    case "none":
      return null;
    case "bool":
    case "str":
      return t.v;
    case "int": {
      const v = BigInt(t.v);
      return v >= -SAFE && v <= SAFE ? Number(v) : v;
    }
    case "float": {
      const x = floatOf(t.v);
      return integralSafe(x) ? new PyFloat(x) : x;
    }
    case "bytes":
      return new Uint8Array(Buffer.from(t.b64, "base64"));
    case "bytearray":
      return bytearray(Buffer.from(t.b64, "base64"));
    case "ref":
      return ids.get(t.id);
    case "list":
    case "tuple": {
      const out: unknown[] = [];
      ids.set(t.id, out);
      for (const x of t.v) out.push(fromTyped(x, ids));
      return t.t === "tuple" ? asTuple(out) : out;
    }
    case "set":
    case "frozenset": {
      const out = new Set<unknown>();
      if (t.t === "frozenset") asFrozenSet(out);
      ids.set(t.id, out);
      for (const x of t.v) out.add(fromTyped(x, ids));
      return out;
    }
    case "dict": {
      if (t.v.every(([k]) => k.t === "str")) {
        const out: Record<string, unknown> = {};
        ids.set(t.id, out);
        for (const [k, v] of t.v) {
          Object.defineProperty(out, (k as { v: string }).v, {
            value: fromTyped(v, ids),
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        return out;
      }
      const out = new Map<unknown, unknown>();
      ids.set(t.id, out);
      for (const [k, v] of t.v) out.set(fromTyped(k, ids), fromTyped(v, ids));
      return out;
    }
  }
}

/** Describes a JS value (made with the mapping) as a typed tree, containers numbered in first-seen order. */
export function toTyped(v: unknown, ids = new Map<object, number>()): Typed {
  switch (typeof v) {
    case "undefined":
      return { t: "none" };
    case "boolean":
      return { t: "bool", v };
    case "string":
      return { t: "str", v };
    case "bigint":
      return { t: "int", v: v.toString() };
    case "number":
      if (integralSafe(v)) return { t: "int", v: String(v) };
      return {
        t: "float",
        v: Number.isNaN(v) ? "nan" : v === Infinity ? "inf" : v === -Infinity ? "-inf" : pyRepr(v),
      };
    default:
      break;
  }
  if (v === null) return { t: "none" };
  if (v instanceof PyFloat) return { t: "float", v: pyRepr(v.value) };
  if (v instanceof Uint8Array) {
    return { t: isByteArray(v) ? "bytearray" : "bytes", b64: Buffer.from(v).toString("base64") };
  }
  const obj = v as object;
  const seen = ids.get(obj);
  if (seen !== undefined) return { t: "ref", id: seen };
  const id = ids.size;
  ids.set(obj, id);
  if (Array.isArray(obj))
    return { t: isTuple(obj) ? "tuple" : "list", id, v: obj.map((x) => toTyped(x, ids)) };
  if (obj instanceof Set)
    return { t: isFrozenSet(obj) ? "frozenset" : "set", id, v: [...obj].map((x) => toTyped(x, ids)) };
  if (obj instanceof Map)
    return { t: "dict", id, v: [...obj].map(([k, x]) => [toTyped(k, ids), toTyped(x, ids)]) };
  const rec = obj as Record<string, unknown>;
  return { t: "dict", id, v: Object.keys(rec).map((k) => [{ t: "str", v: k }, toTyped(rec[k], ids)]) };
}

/** Python's float repr for finite numbers ("1.0", "1e+16", "5e-324"): enough for Python's float() to read back exactly. */
export function pyRepr(x: number): string {
  if (Object.is(x, -0)) return "-0.0";
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return `${x}.0`;
  return String(x);
}
