// The only globals a pickle may name: pure-data constructors that CPython's pickler writes for plain values
// at protocols 0–4 (docs/design.md §4.3). They are implemented by this table; nothing is imported or looked up.
import { PickleError, PickleGlobalError } from "./errors.js";
import { utf8Strict } from "./text.js";
import { asByteArray, asFrozenSet, isTuple } from "./values.js";

export type AllowedKind = "set" | "frozenset" | "bytearray" | "bytes" | "encode";

/** A reference to an allow-listed global, alive only on the decoder's stack until REDUCE consumes it. */
export class GlobalRef {
  constructor(
    readonly kind: AllowedKind,
    readonly module: string,
    readonly qualname: string,
  ) {}
}

// A Map, not an object literal: a name like "constructor" or "__proto__" must never match by inheritance.
const ALLOWED = new Map<string, AllowedKind>([
  ["builtins\nset", "set"],
  ["__builtin__\nset", "set"],
  ["builtins\nfrozenset", "frozenset"],
  ["__builtin__\nfrozenset", "frozenset"],
  ["builtins\nbytearray", "bytearray"],
  ["__builtin__\nbytearray", "bytearray"],
  ["builtins\nbytes", "bytes"],
  ["__builtin__\nbytes", "bytes"],
  ["_codecs\nencode", "encode"],
]);

/** Looks a global up in the allow-list; anything else is refused with an error naming it. */
export function resolveGlobal(module: string, qualname: string): GlobalRef {
  const kind = ALLOWED.get(`${module}\n${qualname}`);
  if (kind === undefined) {
    throw new PickleGlobalError(
      module,
      qualname,
      "the pickle references code or a class, and this worker only decodes plain data (None, bool, int, float, str, bytes, bytearray, list, tuple, dict, set, frozenset)",
    );
  }
  return new GlobalRef(kind, module, qualname);
}

const LATIN1 = new Set(["latin1", "latin-1", "iso-8859-1", "iso8859-1", "l1"]);

function latin1Bytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) throw new PickleError(`'latin-1' codec can't encode character at position ${i}`);
    out[i] = c;
  }
  return out;
}

function items(
  ref: GlobalRef,
  arg: unknown,
): Iterable<unknown> & { readonly length?: number; readonly size?: number } {
  if (Array.isArray(arg) || arg instanceof Set) return arg;
  throw new PickleError(`${ref.module}.${ref.qualname}() of a ${typeName(arg)} is not plain data`);
}

export function typeName(v: unknown): string {
  if (v === null) return "None";
  if (Array.isArray(v)) return isTuple(v) ? "tuple" : "list";
  if (v instanceof GlobalRef) return `global ${v.module}.${v.qualname}`;
  if (v instanceof Uint8Array) return "bytes";
  if (v instanceof Set) return "set";
  if (v instanceof Map) return "dict";
  return typeof v === "object" ? "dict" : typeof v;
}

/** Applies an allow-listed constructor to REDUCE's argument tuple; `budget` counts copied items. */
export function applyGlobal(
  ref: GlobalRef,
  args: readonly unknown[],
  budget: { copied: number; max: number },
): unknown {
  const bad = (): never => {
    throw new PickleError(
      `${ref.module}.${ref.qualname} called with unexpected arguments (${args.map(typeName).join(", ")})`,
    );
  };
  const charge = (n: number): void => {
    budget.copied += n;
    if (budget.copied > budget.max) throw new PickleError(`pickle expands beyond ${budget.max} copied items`);
  };
  const a0 = args[0];
  switch (ref.kind) {
    case "set":
    case "frozenset": {
      if (args.length > 1) bad();
      const src = args.length === 0 ? [] : items(ref, a0);
      charge((src as { length?: number }).length ?? (src as { size?: number }).size ?? 0);
      const set = new Set(src);
      return ref.kind === "set" ? set : asFrozenSet(set);
    }
    case "bytes":
    case "bytearray": {
      let out: Uint8Array;
      if (args.length === 0) out = new Uint8Array(0);
      else if (args.length === 1 && a0 instanceof Uint8Array) out = a0.slice();
      else if (
        args.length === 2 &&
        typeof a0 === "string" &&
        typeof args[1] === "string" &&
        LATIN1.has(args[1].toLowerCase())
      )
        out = latin1Bytes(a0);
      else return bad();
      charge(out.length);
      return ref.kind === "bytes" ? out : asByteArray(out);
    }
    case "encode": {
      if (typeof a0 !== "string") return bad();
      const enc = args.length === 1 ? "utf-8" : args[1];
      if (args.length > 2 || typeof enc !== "string") return bad();
      charge(a0.length);
      if (LATIN1.has(enc.toLowerCase())) return latin1Bytes(a0);
      if (enc.toLowerCase().replace("_", "-") === "utf-8" || enc.toLowerCase() === "utf8")
        return utf8Strict(a0);
      throw new PickleError(`_codecs.encode with encoding '${enc}' is not supported`);
    }
  }
}
