// Decoded values → plain JSON data, for `json_result` (docs/toolkit.md §2.2) and `serialization_format: "json"`.
import { Buffer } from "node:buffer";
import { PickleError } from "./errors.js";
import { MAX_DEPTH, MAX_STR_DIGITS } from "./limits.js";
import { isPyFloat, setOwn } from "./values.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Nodes one conversion may emit: shared references are expanded, so a small DAG could otherwise explode. */
export const MAX_JSON_NODES = 1 << 22;

/** The smallest int with more decimal digits than CPython writes. */
const TOO_MANY_DIGITS = 10n ** BigInt(MAX_STR_DIGITS);

/** An int's decimal text; beyond CPython's digit limit, json.dumps's error (the conversion itself is superlinear). */
function decimal(v: bigint): string {
  if (v >= TOO_MANY_DIGITS || v <= -TOO_MANY_DIGITS)
    throw new PickleError(
      `Exceeds the limit (${MAX_STR_DIGITS} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit`,
    );
  return v.toString();
}

/**
 * bigint beyond 2^53 → decimal string, PyFloat → number, bytes → base64 string, tuple / set → array,
 * Map → object (keys as strings), NaN / ±Infinity → null (as JSON.stringify does); cycles are refused.
 */
export function toJson(value: unknown): Json {
  let nodes = 0;
  const path = new Set<object>();
  const walk = (v: unknown, depth: number): Json => {
    if (++nodes > MAX_JSON_NODES)
      throw new PickleError(`value expands to more than ${MAX_JSON_NODES} JSON nodes`);
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        return Number.isFinite(v) ? v : null;
      case "bigint":
        return Number.isSafeInteger(Number(v)) && BigInt(Number(v)) === v ? Number(v) : decimal(v);
      case "undefined":
        return null;
      case "object":
        break;
      default:
        throw new PickleError(`a ${typeof v} has no JSON form`);
    }
    if (v === null) return null;
    if (isPyFloat(v)) return v.value;
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
    if (depth > MAX_DEPTH) throw new PickleError(`value nests deeper than ${MAX_DEPTH} levels`);
    if (path.has(v)) throw new PickleError("a value that contains itself has no JSON form");
    path.add(v);
    let out: Json;
    if (Array.isArray(v) || v instanceof Set) out = [...v].map((x) => walk(x, depth + 1));
    else if (v instanceof Map) {
      const o: Record<string, Json> = {};
      for (const [k, x] of v) {
        const key = typeof k === "string" ? k : JSON.stringify(walk(k, depth + 1));
        setOwn(o, key, walk(x, depth + 1));
      }
      out = o;
    } else {
      const o: Record<string, Json> = {};
      for (const k of Object.keys(v)) {
        const x = walk((v as Record<string, unknown>)[k], depth + 1);
        setOwn(o, k, x);
      }
      out = o;
    }
    path.delete(v);
    return out;
  };
  return walk(value, 0);
}
