// JS representations of Python values that have no native JS twin (see the mapping in index.ts).

/** A Python float whose value is integral (1.0, -3.0): kept apart from int so it round-trips as float. */
export class PyFloat {
  constructor(readonly value: number) {}
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

const tuples = new WeakSet<readonly unknown[]>();
const bytearrays = new WeakSet<Uint8Array>();
const frozensets = new WeakSet<ReadonlySet<unknown>>();

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
  if (typeof value !== "object" || value === null || value instanceof PyFloat) return undefined;
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
