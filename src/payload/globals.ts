// The only globals a pickle may name: pure-data constructors that CPython's pickler writes for plain values
// at protocols 0–4 (docs/design.md §4.3). They are implemented by this table; nothing is imported or looked up.
import { PickleError, PickleGlobalError } from "./errors.js";
import { utf8Strict } from "./text.js";
import { asByteArray, asFrozenSet, isTuple, unhashableType } from "./values.js";

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
  ["builtins\nfrozenset", "frozenset"],
  ["builtins\nbytearray", "bytearray"],
  ["builtins\nbytes", "bytes"],
  ["_codecs\nencode", "encode"],
]);

/** How to send the standard library's common non-plain values as plain data instead. */
const CONVERT = new Map<string, string>([
  ["datetime", "send datetime values as ISO text (d.isoformat()) or a timestamp (d.timestamp())"],
  ["decimal\nDecimal", "send a Decimal as str(d) (exact) or float(d)"],
  ["builtins\ncomplex", "send a complex as a tuple (z.real, z.imag)"],
]);

/**
 * Looks a global up in the allow-list; anything else is refused with an error naming it. Below protocol 3
 * Python 2's `__builtin__` means `builtins`, as CPython's fix_imports maps it (from protocol 3 on it is no module).
 */
export function resolveGlobal(module: string, qualname: string, protocol: number): GlobalRef {
  const mapped = module === "__builtin__" && protocol < 3 ? "builtins" : module;
  const kind = ALLOWED.get(`${mapped}\n${qualname}`);
  if (kind === undefined) {
    const hint =
      CONVERT.get(`${mapped}\n${qualname}`) ?? (mapped === "datetime" ? CONVERT.get("datetime") : undefined);
    throw new PickleGlobalError(
      module,
      qualname,
      `the pickle references code or a class, and this worker only decodes plain data (None, bool, int, float, str, bytes, bytearray, list, tuple, dict, set, frozenset)${hint ? `; ${hint}` : ""}`,
    );
  }
  return new GlobalRef(kind, module, qualname);
}

type Codec = "latin_1" | "utf_8" | "ascii";
/** The codecs a plain-data pickle can name, by every name Python's encodings.aliases gives them. */
const CODECS = new Map<string, Codec>([
  ...["latin_1", "8859", "cp819", "csisolatin1", "ibm819", "iso8859", "iso8859_1", "iso_8859_1"].map(
    (n) => [n, "latin_1"] as const,
  ),
  ...["iso_8859_1_1987", "iso_ir_100", "l1", "latin", "latin1"].map((n) => [n, "latin_1"] as const),
  ...["utf_8", "cp65001", "u8", "utf", "utf8", "utf8_ucs2", "utf8_ucs4"].map((n) => [n, "utf_8"] as const),
  ...["ascii", "646", "ansi_x3.4_1968", "ansi_x3.4_1986", "ansi_x3_4_1968", "cp367", "csascii", "ibm367"].map(
    (n) => [n, "ascii"] as const,
  ),
  ...["iso646_us", "iso_646.irv_1991", "iso_ir_6", "us", "us_ascii"].map((n) => [n, "ascii"] as const),
]);

/**
 * codecs.lookup(name) for those codecs: lower case, runs of characters that are neither alphanumeric nor "."
 * become one "_" (non-ASCII alphanumerics are dropped), as encodings.normalize_encoding does, then the aliases.
 */
function codecOf(name: string): Codec | undefined {
  let norm = "";
  let punct = false;
  for (const c of name.toLowerCase()) {
    if (/^[\p{L}\p{N}.]$/u.test(c)) {
      if (punct && norm !== "") norm += "_";
      if (c.charCodeAt(0) < 0x80) norm += c;
      punct = false;
    } else punct = true;
  }
  return CODECS.get(norm) ?? CODECS.get(norm.replaceAll(".", "_"));
}

/** str.encode(codec) with errors="strict", CPython's message on a character the codec cannot hold. */
function encodeText(s: string, codec: Codec): Uint8Array {
  if (codec === "utf_8") return utf8Strict(s);
  const [name, limit] = codec === "ascii" ? ["ascii", 0x80] : ["latin-1", 0x100];
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= limit) {
      const hex = c.toString(16).padStart(c > 0xff ? 4 : 2, "0");
      throw new PickleError(
        `'${name}' codec can't encode character '\\${c > 0xff ? "u" : "x"}${hex}' in position ${i}: ordinal not in range(${limit})`,
      );
    }
    out[i] = c;
  }
  return out;
}

/** What iterating `arg` gives in Python (set(x) and frozenset(x) take any iterable), hashable items only. */
function items(ref: GlobalRef, arg: unknown): readonly unknown[] | ReadonlySet<unknown> {
  if (arg instanceof Set) return arg;
  let out: readonly unknown[];
  if (Array.isArray(arg)) out = arg;
  else if (typeof arg === "string") out = [...arg];
  else if (arg instanceof Uint8Array) out = [...arg];
  else if (arg instanceof Map) out = [...arg.keys()];
  else if (typeof arg === "object" && arg !== null && !(arg instanceof GlobalRef)) out = Object.keys(arg);
  else throw new PickleError(`${ref.module}.${ref.qualname}() of a ${typeName(arg)} is not plain data`);
  for (const v of out) {
    const type = unhashableType(v);
    if (type !== undefined) throw new PickleError(`unhashable type: '${type}'`);
  }
  return out;
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
      charge(src instanceof Set ? src.size : (src as readonly unknown[]).length);
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
        codecOf(args[1]) !== undefined
      )
        out = encodeText(a0, codecOf(args[1])!);
      else return bad();
      charge(out.length);
      return ref.kind === "bytes" ? out : asByteArray(out);
    }
    case "encode": {
      if (typeof a0 !== "string") return bad();
      const enc = args.length === 1 ? "utf-8" : args[1];
      if (args.length > 2 || typeof enc !== "string") return bad();
      charge(a0.length);
      const codec = codecOf(enc);
      if (codec !== undefined) return encodeText(a0, codec);
      throw new PickleError(`_codecs.encode with encoding '${enc}' is not supported`);
    }
  }
}
