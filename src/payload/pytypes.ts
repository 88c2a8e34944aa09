// Python types a remote function declares for its parameters and return value ("float", "list[float]",
// "dict[str, int]", "tuple[int, str]", "float | None", or { field: type } for a record): arguments are
// checked and arrive as plain JS values, and declared floats go back to Python as floats.

import { ArgumentError, FlashError, isFlashError } from "../flash-error.js";
import type { RemoteEntry } from "./remote.js";
import {
  asFrozenSet,
  asTuple,
  isFrozenSet,
  isPyFloat,
  isTuple,
  PyFloat,
  pythonTypeName,
  setOwn,
} from "./values.js";

/** A Python type as written in an annotation, or a record (a dict with these str keys) as an object. */
export type PyType = string | { readonly [field: string]: PyType };

type Scalar = "int" | "float" | "str" | "bool" | "bytes" | "bytearray" | "None" | "any";
/** A parsed type. */
export type TypeNode =
  | { kind: Scalar }
  | { kind: "list" | "set" | "frozenset"; item: TypeNode }
  | { kind: "tuple"; items: TypeNode[]; rest?: TypeNode }
  | { kind: "dict"; key: TypeNode; value: TypeNode }
  | { kind: "record"; fields: Map<string, TypeNode> }
  | { kind: "union"; options: TypeNode[] };

const SCALARS = new Map<string, Scalar>([
  ["int", "int"],
  ["float", "float"],
  ["str", "str"],
  ["bool", "bool"],
  ["bytes", "bytes"],
  ["bytearray", "bytearray"],
  ["None", "None"],
  ["any", "any"],
  ["Any", "any"],
  ["object", "any"],
]);
const GENERICS = new Map<string, number>([
  ["list", 1],
  ["set", 1],
  ["frozenset", 1],
  ["dict", 2],
  ["tuple", -1],
  ["Optional", 1],
]);

/** A declaration the parser cannot read; the message quotes it. */
export class PyTypeError extends FlashError {
  readonly code = "PY_TYPE_INVALID";
  override name = "PyTypeError";
}

/** Parses a declared type; throws PyTypeError naming what it could not read. */
export function parsePyType(type: PyType): TypeNode {
  if (typeof type !== "string") {
    if (typeof type !== "object" || type === null || Array.isArray(type))
      throw new PyTypeError(
        `a type is a string such as "float" or an object of field types, not ${String(type)}`,
      );
    const fields = new Map<string, TypeNode>();
    for (const [k, v] of Object.entries(type)) fields.set(k, parsePyType(v));
    return { kind: "record", fields };
  }
  const tokens = type.match(/[A-Za-z_][\w]*|\.\.\.|[[\],|]|\S/g) ?? [];
  let at = 0;
  const fail = (why: string): never => {
    throw new PyTypeError(`cannot read the type "${type}": ${why}`);
  };
  const union = (): TypeNode => {
    const options = [single()];
    while (tokens[at] === "|") {
      at++;
      options.push(single());
    }
    return options.length === 1 ? options[0]! : { kind: "union", options };
  };
  const single = (): TypeNode => {
    const name = tokens[at++];
    if (name === undefined) return fail("a type name is missing");
    const scalar = SCALARS.get(name);
    if (scalar !== undefined) return { kind: scalar };
    const arity = GENERICS.get(name);
    if (arity === undefined)
      return fail(
        `unknown type '${name}' (known: ${[...SCALARS.keys(), ...GENERICS.keys()].join(", ")}, and X | Y)`,
      );
    const args: TypeNode[] = [];
    let variadic = false;
    if (tokens[at] === "[") {
      at++;
      for (;;) {
        if (tokens[at] === "...") {
          at++;
          variadic = true;
        } else args.push(union());
        const next = tokens[at++];
        if (next === "]") break;
        if (next !== ",") return fail(`expected ',' or ']' after an argument of ${name}`);
      }
    }
    const any: TypeNode = { kind: "any" };
    if (name === "tuple") {
      if (variadic) {
        if (args.length !== 1) return fail("tuple[X, ...] takes exactly one type before '...'");
        return { kind: "tuple", items: [], rest: args[0]! };
      }
      return args.length === 0 ? { kind: "tuple", items: [], rest: any } : { kind: "tuple", items: args };
    }
    if (variadic) return fail(`'...' is only allowed in tuple[X, ...]`);
    if (args.length !== 0 && args.length !== arity)
      return fail(`${name}[...] takes ${arity} type${arity === 1 ? "" : "s"}, got ${args.length}`);
    if (name === "Optional") {
      if (args.length === 0) return fail("Optional needs a type: Optional[X]");
      return { kind: "union", options: [args[0]!, { kind: "None" }] };
    }
    if (name === "dict") return { kind: "dict", key: args[0] ?? any, value: args[1] ?? any };
    return { kind: name as "list" | "set" | "frozenset", item: args[0] ?? any };
  };
  const node = union();
  if (at < tokens.length) fail(`unexpected '${tokens[at]}'`);
  return node;
}

/** The declaration as Python writes it, for messages. */
export function formatPyType(node: TypeNode): string {
  switch (node.kind) {
    case "list":
    case "set":
    case "frozenset":
      return `${node.kind}[${formatPyType(node.item)}]`;
    case "tuple":
      return node.rest
        ? `tuple[${formatPyType(node.rest)}, ...]`
        : `tuple[${node.items.map(formatPyType).join(", ")}]`;
    case "dict":
      return `dict[${formatPyType(node.key)}, ${formatPyType(node.value)}]`;
    case "record":
      return `{${[...node.fields].map(([k, v]) => `'${k}': ${formatPyType(v)}`).join(", ")}}`;
    case "union":
      return node.options.map(formatPyType).join(" | ");
    default:
      return node.kind;
  }
}

/** A value that does not have its declared type; `where` is the path inside the argument or return value. */
export class TypeMismatch extends FlashError {
  readonly code = "TYPE_MISMATCH";
  override name = "TypeMismatch";
  constructor(
    readonly where: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`${where} must be ${expected}, not ${actual}`);
  }
}

type Direction = "in" | "out";

/**
 * Converts a value to its declared type: "in" for arguments (floats become plain numbers), "out" for the
 * return value (declared floats become PyFloat so Python gets float). Containers are copied with their
 * Python tags kept; a value that does not fit throws TypeMismatch naming where.
 */
export function convert(value: unknown, node: TypeNode, direction: Direction, where: string): unknown {
  return new Converter(direction).run(value, node, where);
}

class Converter {
  /** Containers on the current path: a recursive value cannot be copied. */
  private readonly path = new Set<object>();

  constructor(private readonly direction: Direction) {}

  run(v: unknown, node: TypeNode, where: string): unknown {
    const mismatch = (): never => {
      throw new TypeMismatch(where, formatPyType(node), pythonTypeName(v));
    };
    switch (node.kind) {
      case "any":
        return v;
      case "None":
        return v === null || v === undefined ? null : mismatch();
      case "bool":
        return typeof v === "boolean" ? v : mismatch();
      case "str":
        return typeof v === "string" ? v : mismatch();
      case "bytes":
      case "bytearray":
        return v instanceof Uint8Array ? v : mismatch();
      case "int":
        if (typeof v === "bigint" || typeof v === "boolean") return v;
        if (typeof v === "number" && Number.isInteger(v)) return v;
        if (isPyFloat(v) && this.direction === "out" && Number.isInteger(v.value)) return v.value;
        return mismatch();
      case "float": {
        // Python accepts an int (or bool) wherever a float is declared
        const n =
          typeof v === "number"
            ? v
            : isPyFloat(v)
              ? v.value
              : typeof v === "bigint" || typeof v === "boolean"
                ? Number(v)
                : undefined;
        if (n === undefined) return mismatch();
        return this.direction === "out" ? new PyFloat(n) : n;
      }
      case "union": {
        for (const option of node.options) {
          try {
            return this.run(v, option, where);
          } catch (e) {
            if (!isFlashError(e, "TYPE_MISMATCH")) throw e;
          }
        }
        return mismatch();
      }
      default:
        if (typeof v !== "object" || v === null) return mismatch();
        if (this.path.has(v))
          throw new TypeMismatch(where, `${formatPyType(node)} without cycles`, "a recursive value");
        this.path.add(v);
        try {
          return this.container(v, node, where, mismatch);
        } finally {
          this.path.delete(v);
        }
    }
  }

  private container(v: object, node: TypeNode, where: string, mismatch: () => never): unknown {
    switch (node.kind) {
      case "list":
        if (!Array.isArray(v)) return mismatch();
        return this.keepTag(
          v,
          v.map((x, i) => this.run(x, node.item, `${where}[${i}]`)),
        );
      case "tuple": {
        if (!Array.isArray(v)) return mismatch();
        if (!node.rest && v.length !== node.items.length) return mismatch();
        const items = v.map((x, i) => this.run(x, node.rest ?? node.items[i]!, `${where}[${i}]`));
        return this.keepTag(v, items);
      }
      case "set":
      case "frozenset": {
        if (!(v instanceof Set)) return mismatch();
        const items = new Set([...v].map((x) => this.run(x, node.item, `${where} item`)));
        return isFrozenSet(v) ? asFrozenSet(items) : items;
      }
      case "dict": {
        if (v instanceof Map) {
          const out = new Map<unknown, unknown>();
          for (const [k, x] of v)
            out.set(this.run(k, node.key, `${where} key`), this.run(x, node.value, `${where}[${String(k)}]`));
          return out;
        }
        if (!isPlainRecord(v)) return mismatch();
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          this.run(k, node.key, `${where} key`);
          setOwn(out, k, this.run(x, node.value, `${where}['${k}']`));
        }
        return out;
      }
      case "record": {
        if (!isPlainRecord(v)) return mismatch();
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) {
          const field = node.fields.get(k);
          setOwn(out, k, field === undefined ? x : this.run(x, field, `${where}['${k}']`));
        }
        return out;
      }
      default:
        return mismatch();
    }
  }

  /** A copy of a tuple stays a tuple; a list a list. */
  private keepTag(from: readonly unknown[], items: unknown[]): unknown[] | readonly unknown[] {
    return isTuple(from) ? asTuple(items) : items;
  }
}

/** Objects that pickle writes as a dict (not bytes, sets, maps or arrays). */
function isPlainRecord(v: object): v is Record<string, unknown> {
  return !(
    v instanceof Uint8Array ||
    v instanceof Set ||
    v instanceof Map ||
    Array.isArray(v) ||
    isPyFloat(v)
  );
}

/** Parsed declarations of an entry, by parameter position and for the return value. */
export interface Declared {
  args: (TypeNode | undefined)[];
  result?: TypeNode;
}

/** Checks an entry's declarations (names listed in params, types readable); throws a TypeError naming the fault. */
export function declaredTypes(name: string, entry: RemoteEntry): Declared {
  const declared: Declared = { args: [] };
  for (const [key, type] of Object.entries(entry.types ?? {})) {
    let node: TypeNode;
    try {
      node = parsePyType(type);
    } catch (e) {
      throw new ArgumentError(
        `remote("${name}"): types.${key}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    if (key === "return") {
      declared.result = node;
      continue;
    }
    const at = entry.params?.indexOf(key) ?? -1;
    if (at < 0)
      throw new ArgumentError(
        `remote("${name}"): types names the parameter '${key}', which params does not list (params: [${(entry.params ?? []).map((p) => `"${p}"`).join(", ")}])`,
      );
    declared.args[at] = node;
  }
  return declared;
}
