// JS representations of Python values that have no native JS twin (see the mapping in index.ts).
// Their identity lives on globalThis under Symbol.for keys: a value made by any copy of flash-worker
// in the process (the CLI's, a user's node_modules one, one tsx loaded again) is recognised by all.

const BRAND = Symbol.for("flash-worker.PyFloat");

/** A Python float whose value is integral (1.0, -3.0): kept apart from int so it round-trips as float. */
export class PyFloat {
  constructor(readonly value: number) {}
  /** `x instanceof PyFloat` is true for a PyFloat made by any copy of the package. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return isPyFloat(value);
  }
  valueOf(): number {
    return this.value;
  }
  toJSON(): number {
    return this.value;
  }
  toString(): string {
    return Number.isInteger(this.value) ? `${this.value}.0` : String(this.value);
  }
}
Object.defineProperty(PyFloat.prototype, BRAND, { value: true });

/** A dict key as an own data property: "__proto__" too, which plain assignment would take as the prototype. */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__")
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/** True for a PyFloat of any copy of the package (the brand is on every copy's prototype). */
export function isPyFloat(value: unknown): value is PyFloat {
  return typeof value === "object" && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
}

interface Tags {
  tuples: WeakSet<readonly unknown[]>;
  bytearrays: WeakSet<Uint8Array>;
  frozensets: WeakSet<ReadonlySet<unknown>>;
}
const TAGS = Symbol.for("flash-worker.python-tags");
const holder = globalThis as { [TAGS]?: Tags };
holder[TAGS] ??= { tuples: new WeakSet(), bytearrays: new WeakSet(), frozensets: new WeakSet() };

/** A tag's property: neither enumerable nor writable, so JSON, spreads and deep equality pass it by. */
const TAGGED = { value: true };

/**
 * One Python type remembered on JS values: a non-enumerable Symbol.for property on the value, or, for a value
 * that can take no property (frozen, sealed), an entry in the WeakSet on globalThis. Not the WeakSet alone: V8's
 * weak tables slow down superlinearly past ~2 million entries (a lookup took 0.2 µs at 1 million, 11 µs at 4), and
 * a pickle of a few MB holds that many tuples.
 */
class Tag<T extends object> {
  private readonly key: symbol;

  constructor(
    name: string,
    private readonly sealed: WeakSet<T>,
  ) {
    this.key = Symbol.for(`flash-worker.${name}`);
  }

  add(value: T): void {
    if (Object.isExtensible(value)) Object.defineProperty(value, this.key, TAGGED);
    else this.sealed.add(value);
  }

  has(value: T): boolean {
    return (value as { [key: symbol]: unknown })[this.key] === true || this.sealed.has(value);
  }
}

const tuples = new Tag<readonly unknown[]>("tuple", holder[TAGS].tuples);
const bytearrays = new Tag<Uint8Array>("bytearray", holder[TAGS].bytearrays);
const frozensets = new Tag<ReadonlySet<unknown>>("frozenset", holder[TAGS].frozensets);
/** A Python tuple: a frozen array remembered as a tuple. */
export type Tuple = readonly unknown[];

/** Makes a Python tuple from its items. */
export function tuple(...items: unknown[]): Tuple {
  return asTuple(items);
}

/** Marks an array as a Python tuple and freezes it; returns the same array. */
export function asTuple(items: unknown[]): Tuple {
  tuples.add(items);
  return Object.freeze(items);
}

/** Registers an array as a tuple without freezing it yet (the decoder freezes after its fix-ups). */
export function markTuple(items: unknown[]): void {
  tuples.add(items);
}

export function isTuple(value: unknown): boolean {
  return Array.isArray(value) && tuples.has(value);
}

/** Makes a Python bytearray: a Uint8Array remembered as bytearray (a plain Uint8Array is bytes). */
export function bytearray(data: ArrayLike<number> | Uint8Array = []): Uint8Array {
  const out = Uint8Array.from(data);
  bytearrays.add(out);
  return out;
}

/** Marks an existing Uint8Array as a bytearray; returns it. */
export function asByteArray(data: Uint8Array): Uint8Array {
  bytearrays.add(data);
  return data;
}

export function isByteArray(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && bytearrays.has(value);
}

/** Makes a Python frozenset: a Set remembered as frozenset (a plain Set is set). */
export function frozenset(items: Iterable<unknown> = []): ReadonlySet<unknown> {
  return asFrozenSet(new Set(items));
}

export function asFrozenSet(set: Set<unknown>): ReadonlySet<unknown> {
  frozensets.add(set);
  return set;
}

export function isFrozenSet(value: unknown): boolean {
  return value instanceof Set && frozensets.has(value);
}

/**
 * The Python type name of the first unhashable thing in `value` (a list, dict, set or bytearray, also inside a
 * tuple), as CPython's "unhashable type: '<name>'" names it; undefined when the value can be a key or member.
 */
export function unhashableType(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || isPyFloat(value)) return undefined;
  if (value instanceof Uint8Array) return bytearrays.has(value) ? "bytearray" : undefined;
  if (Array.isArray(value)) {
    if (!tuples.has(value)) return "list";
    for (const item of value) {
      const inner = unhashableType(item);
      if (inner !== undefined) return inner;
    }
    return undefined;
  }
  if (value instanceof Set) return frozensets.has(value) ? undefined : "set";
  if (value instanceof Map || Object.getPrototypeOf(value) === Object.prototype) return "dict";
  return undefined;
}

/** The Python type a JS value is sent as (the encoder's mapping), or what it is in JS when it has none. */
export function pythonTypeName(value: unknown): string {
  switch (typeof value) {
    case "number":
      return Number.isInteger(value) && Number.isSafeInteger(value) && !Object.is(value, -0)
        ? "int"
        : "float";
    case "bigint":
      return "int";
    case "string":
      return "str";
    case "boolean":
      return "bool";
    case "undefined":
      return "None";
    case "object":
      break;
    default:
      return `a JS ${typeof value}`;
  }
  if (value === null) return "None";
  if (isPyFloat(value)) return "float";
  if (value instanceof Uint8Array) return isByteArray(value) ? "bytearray" : "bytes";
  if (Array.isArray(value)) return isTuple(value) ? "tuple" : "list";
  if (value instanceof Set) return isFrozenSet(value) ? "frozenset" : "set";
  if (value instanceof Map) return "dict";
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto === Object.prototype || proto === null) return "dict";
  return `a JS ${value.constructor?.name ?? "object"}`;
}
