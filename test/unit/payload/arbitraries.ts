// fast-check generators of JS values that stand for Python plain data (the mapping of src/payload/index.ts).
import fc from "fast-check";
import { bytearray, frozenset, isFrozenSet, isTuple, PyFloat, tuple } from "../../../src/payload/index.js";

/** Python's equality for hashable values as a string: 1 == 1.0 == True, so sets and dict keys stay unique in both languages. */
export function pyKey(v: unknown): string {
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "n1" : "n0";
  if (typeof v === "bigint") return `n${v}`;
  if (typeof v === "number" || v instanceof PyFloat) {
    const x = Number(v);
    return Number.isInteger(x) ? `n${BigInt(x)}` : `n${x}`;
  }
  if (typeof v === "string") return `s${JSON.stringify(v)}`;
  if (v instanceof Uint8Array) return `b${Buffer.from(v).toString("hex")}`;
  if (Array.isArray(v) && isTuple(v)) return `t(${v.map(pyKey).join(",")})`;
  if (v instanceof Set && isFrozenSet(v)) return `f{${[...v].map(pyKey).sort().join(",")}}`;
  throw new Error("unhashable");
}

const float = fc
  .double()
  .map((d) =>
    Number.isInteger(d) && Math.abs(d) <= Number.MAX_SAFE_INTEGER && !Object.is(d, -0) ? new PyFloat(d) : d,
  );

const int = fc.oneof(
  fc.integer(),
  fc.integer({ min: -1000, max: 1000 }),
  fc.maxSafeInteger(),
  fc.bigInt({ min: -(2n ** 300n), max: 2n ** 300n }),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
);

const str = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.constantFrom("a\ud800b", "\udc00", "__proto__", "1"),
);

const scalar = fc.oneof(fc.constant(null), fc.boolean(), int, float, str, fc.uint8Array({ maxLength: 24 }));

/** Hashable scalars: NaN is left out because Python keeps NaNs apart by identity, not value. */
const hashableScalar = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  int,
  float.filter((f) => !Number.isNaN(Number(f))),
  str,
  fc.uint8Array({ maxLength: 8 }),
);

const { hashable } = fc.letrec<{ hashable: unknown }>((tie) => ({
  hashable: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    hashableScalar,
    fc.array(tie("hashable"), { maxLength: 3 }).map((a) => tuple(...a)),
    fc.uniqueArray(hashableScalar, { maxLength: 4, selector: pyKey }).map((a) => frozenset(a)),
  ),
}));

export const pyValue = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true, maxDepth: 5 },
    scalar,
    fc.uint8Array({ maxLength: 16 }).map((b) => bytearray(b)),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.array(tie("value"), { maxLength: 4 }).map((a) => tuple(...a)),
    fc.dictionary(str, tie("value"), { maxKeys: 5 }),
    fc
      .uniqueArray(fc.tuple(hashable, tie("value")), { maxLength: 4, selector: ([k]) => pyKey(k) })
      .map((entries) => new Map(entries)),
    fc.uniqueArray(hashable, { maxLength: 5, selector: pyKey }).map((a) => new Set(a)),
    fc.uniqueArray(hashable, { maxLength: 5, selector: pyKey }).map((a) => frozenset(a)),
  ),
})).value;
