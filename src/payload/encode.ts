// The pickle encoder: JS values (mapped as index.ts documents) → pickle protocol 5 by default, 2–4 on request,
// read back exactly by Python's pickle.loads and cloudpickle.loads.
import { Buffer } from "node:buffer";
import { writeUtf8 } from "./buffer-internals.js";
import { PickleError } from "./errors.js";
import { MAX_DEPTH } from "./limits.js";
import { encodeUtf8 } from "./utf8.js";
import { isByteArray, isFrozenSet, isPyFloat, isTuple } from "./values.js";

export type Protocol = 2 | 3 | 4 | 5;

export interface EncodeOptions {
  /** Pickle protocol; 5 is what cloudpickle writes and reads by default. */
  protocol?: Protocol;
  /** Deepest nesting accepted before a clean error (instead of a stack overflow). */
  maxDepth?: number;
}

/** Python batches APPENDS / SETITEMS / ADDITEMS by 1000; readers need not, but we match it. */
const BATCH = 1000;
const MAX_I32 = 2147483647;
const MIN_I32 = -2147483648;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** Dict positions whose last key is remembered (records repeat their keys in order). */
const KEY_SLOTS = 64;
/** Slack added when one write outgrows twice the buffer, so the few bytes after a large str or bytes still fit. */
const SLACK = 4096;
/** The largest output buffer kept for the next encode: what a 10 MB payload grows it to (doubling from 1 KB). */
const KEEP = 16 * 1024 * 1024;

/**
 * The last encode's output buffer, lent to the next one: a worker encodes output after output, and growing a
 * fresh buffer each time (1 KB doubling to 16 MB) allocated ~32 MB and copied ~16 MB for an 8 MB pickle. Taken
 * while in use, so an encode inside an encode (a getter that pickles) grows its own.
 */
let spare: Buffer | null = null;

/** A growable output buffer with the few writes the opcodes need; every write makes its own room. */
class Writer {
  /** The same bytes as a Buffer, for Node's native string writer. */
  node: Buffer;
  buf: Uint8Array;
  dv: DataView;
  n = 0;

  constructor() {
    this.node = spare ?? Buffer.allocUnsafeSlow(1024);
    spare = null;
    this.buf = new Uint8Array(this.node.buffer, 0, this.node.length);
    this.dv = new DataView(this.node.buffer);
  }

  ensure(extra: number): void {
    if (this.n + extra > this.buf.length) this.grow(extra);
  }
  /** Doubles the buffer, or sizes it for a write larger than that (a big str or bytes: one copy, not many). */
  private grow(extra: number): void {
    const need = this.n + extra;
    const size = Math.max(this.buf.length * 2, need + SLACK);
    // no zero-fill: every byte up to n is copied over, and nothing past n is ever read
    const node = Buffer.allocUnsafeSlow(size);
    const next = new Uint8Array(node.buffer, 0, size);
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
    this.dv = new DataView(next.buffer);
    this.node = node;
  }
  byte(b: number): void {
    this.ensure(1);
    this.buf[this.n++] = b;
  }
  byte2(a: number, b: number): void {
    this.ensure(2);
    const buf = this.buf;
    const n = this.n;
    buf[n] = a;
    buf[n + 1] = b;
    this.n = n + 2;
  }
  /** An opcode and its 4-byte little-endian argument. */
  op32(op: number, v: number): void {
    this.ensure(5);
    this.buf[this.n] = op;
    this.dv.setUint32(this.n + 1, v, true);
    this.n += 5;
  }
  /** An opcode and its 8-byte little-endian argument. */
  op64(op: number, v: number): void {
    this.ensure(9);
    this.buf[this.n] = op;
    this.dv.setUint32(this.n + 1, v % 4294967296, true);
    this.dv.setUint32(this.n + 5, Math.floor(v / 4294967296), true);
    this.n += 9;
  }
  bytes(b: Uint8Array): void {
    this.ensure(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }
  ascii(s: string): void {
    this.ensure(s.length);
    for (let i = 0; i < s.length; i++) this.buf[this.n++] = s.charCodeAt(i);
  }
  /** The bytes written, in a buffer of their own; the buffer written into is kept for the next encode. */
  result(): Uint8Array {
    const out = this.buf.slice(0, this.n);
    if (this.node.length <= KEEP) spare = this.node;
    return out;
  }
}

/** Minimal little-endian two's complement bytes of an int (CPython's encode_long), in time linear in its size. */
function longBytes(v: bigint): Uint8Array {
  if (v === 0n) return new Uint8Array(0);
  const negative = v < 0n;
  // a negative int's bytes are the complement of those of -v - 1, whose sign bit is then clear
  let hex = (negative ? -v - 1n : v).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  // a top digit of 8 or more would read as the sign bit: one more byte
  if (hex.charCodeAt(0) >= 0x38) hex = `00${hex}`;
  const out = Buffer.from(hex, "hex").reverse();
  if (negative) for (let i = 0; i < out.length; i++) out[i] = out[i]! ^ 0xff;
  return out;
}

function describe(v: unknown): string {
  if (typeof v === "object" && v !== null) return v.constructor?.name ?? "object";
  return typeof v;
}

/** Whether something gave Object.prototype enumerable keys (`for…in` would then list them for every dict). */
function prototypeHasKeys(): boolean {
  for (const _ in Object.prototype) return true;
  return false;
}

/** Encodes a JS value as a pickle that Python reads back as the mapped Python value. */
export function encode(value: unknown, options: EncodeOptions = {}): Uint8Array {
  const protocol = options.protocol ?? 5;
  if (![2, 3, 4, 5].includes(protocol)) throw new PickleError(`unsupported pickle protocol: ${protocol}`);
  const p = new Pickler(protocol, options.maxDepth ?? MAX_DEPTH);
  p.byte2(0x80, protocol);
  p.save(value, 0);
  p.byte(0x2e);
  return p.result();
}

/**
 * One encode. State lives in fields and helpers are methods (stable call targets, as in the decoder), so
 * the optimizing compiler keeps its code across calls and inlines the small writes into the loops.
 */
class Pickler extends Writer {
  private readonly memo = new Map<object, number>();
  private readonly strings = new Map<string, number>();
  private memoNext = 0;
  private readonly builtins: string;
  /** Plain objects can be walked with `for…in`: their prototype adds no enumerable keys. */
  private readonly forIn = !prototypeHasKeys();
  /** The key last written at each of a dict's first KEY_SLOTS positions, and its memo index. */
  private readonly keyAt: string[] = [];
  private readonly keyMemo: number[] = [];

  constructor(
    private readonly protocol: Protocol,
    private readonly maxDepth: number,
  ) {
    super();
    this.builtins = protocol >= 3 ? "builtins" : "__builtin__";
  }

  private put(): number {
    const idx = this.memoNext++;
    if (this.protocol >= 4) this.byte(0x94);
    else if (idx < 256) this.byte2(0x71, idx);
    else this.op32(0x72, idx);
    return idx;
  }

  private get(idx: number): void {
    if (idx < 256) this.byte2(0x68, idx);
    else this.op32(0x6a, idx);
  }

  private global(module: string, name: string): void {
    this.byte(0x63);
    this.ascii(`${module}\n${name}\n`);
  }

  /**
   * A number: a safe integer as the shortest of BININT1, BININT2, BININT and LONG1 (as CPython picks), anything
   * else (fractions, -0, beyond 2^53, NaN, ±Infinity) as BINFLOAT. One write path for every number, room made once.
   */
  private number(v: number): void {
    this.ensure(9);
    const buf = this.buf;
    const n = this.n;
    // -0 passes the int32 test but is a float to Python
    const int32 = (v | 0) === v && (v !== 0 || 1 / v > 0);
    if (int32) {
      if (v >= 0 && v < 256) {
        buf[n] = 0x4b;
        buf[n + 1] = v;
        this.n = n + 2;
      } else if (v >= 0 && v < 65536) {
        buf[n] = 0x4d;
        buf[n + 1] = v & 0xff;
        buf[n + 2] = v >> 8;
        this.n = n + 3;
      } else {
        buf[n] = 0x4a;
        this.dv.setInt32(n + 1, v, true);
        this.n = n + 5;
      }
    } else if (v !== 0 && Number.isInteger(v) && v <= MAX_SAFE && v >= -MAX_SAFE) this.long1(v, n);
    else this.float(v);
  }

  /**
   * A safe integer beyond int32 as LONG1, at n with 9 bytes of room: 5 to 7 bytes of two's complement, the low
   * 32 bits as one uint32 (ToUint32 is exact mod 2^32), the rest from the signed high part (|hi| < 2^21).
   */
  private long1(v: number, n: number): void {
    const size = v < 2 ** 39 && v >= -(2 ** 39) ? 5 : v < 2 ** 47 && v >= -(2 ** 47) ? 6 : 7;
    const buf = this.buf;
    const lo = v >>> 0;
    const hi = (v - lo) / 4294967296;
    buf[n] = 0x8a;
    buf[n + 1] = size;
    this.dv.setUint32(n + 2, lo, true);
    buf[n + 6] = hi & 0xff;
    if (size > 5) buf[n + 7] = (hi >> 8) & 0xff;
    if (size > 6) buf[n + 8] = (hi >> 16) & 0xff;
    this.n = n + 2 + size;
  }

  /** A bigint: BININT inside int32 (as the encoder always wrote it), else LONG1 / LONG4. */
  private bigint(v: bigint): void {
    if (v >= MIN_I32 && v <= MAX_I32) {
      this.ensure(5);
      this.buf[this.n] = 0x4a;
      this.dv.setInt32(this.n + 1, Number(v), true);
      this.n += 5;
      return;
    }
    const b = longBytes(v);
    if (b.length < 256) this.byte2(0x8a, b.length);
    else this.op32(0x8b, b.length);
    this.bytes(b);
  }

  private float(v: number): void {
    this.ensure(9);
    this.buf[this.n] = 0x47;
    this.dv.setFloat64(this.n + 1, v, false);
    this.n += 9;
  }

  /** A str; dict keys are memoized (they repeat across records), other strings are written as they come. */
  private str(s: string, memoize = false): void {
    const known = memoize ? this.strings.get(s) : undefined;
    if (known !== undefined) {
      this.get(known);
      return;
    }
    const len = s.length;
    if (len < 256 && this.protocol >= 4 && this.shortAscii(s)) {
      if (memoize && len > 1) this.strings.set(s, this.put());
      return;
    }
    if (len > 256 && (s as unknown as { isWellFormed(): boolean }).isWellFormed()) this.utf8(s);
    else {
      const b = encodeUtf8(s);
      this.strHeader(b.length);
      this.bytes(b);
    }
    if (memoize && len > 1) this.strings.set(s, this.put());
  }

  /** Writes s as SHORT_BINUNICODE if it is all ASCII (the common case for keys and small values); false if not. */
  private shortAscii(s: string): boolean {
    const len = s.length;
    this.ensure(len + 2);
    const buf = this.buf;
    const at = this.n;
    for (let i = 0; i < len; i++) {
      const c = s.charCodeAt(i);
      if (c >= 0x80) return false;
      buf[at + 2 + i] = c;
    }
    buf[at] = 0x8c;
    buf[at + 1] = len;
    this.n = at + 2 + len;
    return true;
  }

  /** A long well-formed str, encoded by Node straight into the output (no intermediate copy). */
  private utf8(s: string): void {
    const size = Buffer.byteLength(s, "utf8");
    this.strHeader(size);
    this.ensure(size);
    this.n += writeUtf8(this.node, s, this.n, size);
  }

  private strHeader(size: number): void {
    if (size < 256 && this.protocol >= 4) this.byte2(0x8c, size);
    else if (size <= 0xffffffff) this.op32(0x58, size);
    else if (this.protocol >= 4) this.op64(0x8d, size);
    else throw new PickleError("str longer than 4 GiB needs protocol 4 or higher");
  }

  private rawBytes(b: Uint8Array): void {
    if (this.protocol < 3) {
      // protocol 2 has no bytes opcode: Python writes _codecs.encode(latin-1 text, "latin1")
      if (b.length === 0) {
        this.global(this.builtins, "bytes");
        this.byte2(0x29, 0x52);
        return;
      }
      this.global("_codecs", "encode");
      let s = "";
      for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096));
      this.str(s);
      this.str("latin1");
      this.byte2(0x86, 0x52);
      return;
    }
    if (b.length < 256) this.byte2(0x43, b.length);
    else if (b.length <= 0xffffffff) this.op32(0x42, b.length);
    else this.op64(0x8e, b.length);
    this.bytes(b);
  }

  save(v: unknown, depth: number): void {
    switch (typeof v) {
      case "number":
        this.number(v);
        return;
      case "string":
        this.str(v);
        return;
      case "boolean":
        this.byte(v ? 0x88 : 0x89);
        return;
      case "bigint":
        this.bigint(v);
        return;
      case "undefined":
        this.byte(0x4e);
        return;
      case "object":
        if (v === null) this.byte(0x4e);
        else this.saveObject(v, depth);
        return;
      default:
        throw new PickleError(`cannot pickle a ${typeof v}: only plain data has a Python equivalent`);
    }
  }

  private saveObject(v: object, depth: number): void {
    if (isPyFloat(v)) {
      this.float(v.value);
      return;
    }
    const seen = this.memo.get(v);
    if (seen !== undefined) {
      this.get(seen);
      return;
    }
    if (depth > this.maxDepth) throw new PickleError(`value nests deeper than ${this.maxDepth} levels`);
    const d = depth + 1;
    if (this.isPlain(v)) {
      // the common case first: a plain object (a record) is a dict of its own enumerable string keys
      this.byte(0x7d);
      this.memo.set(v, this.put());
      this.objectPairs(v as Record<string, unknown>, d);
    } else if (Array.isArray(v)) {
      if (isTuple(v)) this.saveTuple(v, d);
      else {
        this.byte(0x5d);
        this.memo.set(v, this.put());
        this.saveItems(v, d, 0x61, 0x65);
      }
    } else if (v instanceof Uint8Array) this.saveBytes(v);
    else if (v instanceof Set) this.saveSet(v, d);
    else if (v instanceof Map) {
      this.byte(0x7d);
      this.memo.set(v, this.put());
      this.savePairs([...v.keys()], [...v.values()], d);
    } else {
      refuseObject(v);
      // other objects (class instances, like JSON) become dicts of their own enumerable string keys
      this.byte(0x7d);
      this.memo.set(v, this.put());
      // one native read of every value, in the keys' order (a lookup per key is megamorphic across records)
      this.savePairs(Object.keys(v), Object.values(v), d);
    }
  }

  /** Whether v is a plain object, walked with `for…in` (the prototype adds no keys; arrays and views are not dicts). */
  private isPlain(v: object): boolean {
    return (
      this.forIn &&
      Object.getPrototypeOf(v) === Object.prototype &&
      !Array.isArray(v) &&
      !ArrayBuffer.isView(v)
    );
  }

  private saveBytes(v: Uint8Array): void {
    if (!isByteArray(v)) this.rawBytes(v);
    else if (this.protocol >= 5) {
      this.op64(0x96, v.length);
      this.bytes(v);
    } else {
      this.global(this.builtins, "bytearray");
      if (v.length === 0) this.byte(0x29);
      else {
        this.rawBytes(v);
        this.byte(0x85);
      }
      this.byte(0x52);
    }
    this.memo.set(v, this.put());
  }

  private saveSet(v: Set<unknown>, d: number): void {
    const items = [...v];
    if (isFrozenSet(v)) {
      if (this.protocol >= 4) {
        this.byte(0x28);
        for (const x of items) this.save(x, d);
        const again = this.memo.get(v);
        if (again !== undefined) {
          this.byte(0x31);
          this.get(again);
          return;
        }
        this.byte(0x91);
      } else this.reduceWithList("frozenset", items, d);
    } else if (this.protocol >= 4) {
      this.byte(0x8f);
      this.memo.set(v, this.put());
      this.saveItems(items, d, -1, 0x90);
      return;
    } else this.reduceWithList("set", items, d);
    this.memo.set(v, this.put());
  }

  /** Items in batches of 1000, as Python writes them: MARK … many-op, or the single-item op for a batch of one. */
  private saveItems(items: readonly unknown[], d: number, single: number, many: number): void {
    for (let start = 0; start < items.length; start += BATCH) {
      const stop = Math.min(items.length, start + BATCH);
      const one = stop - start === 1 && single >= 0;
      if (!one) this.byte(0x28);
      for (let i = start; i < stop; i++) this.save(items[i], d);
      this.byte(one ? single : many);
    }
  }

  /** A dict's pairs in batches of 1000 (SETITEM for a batch of one); str keys are memoized. */
  private savePairs(keys: readonly unknown[], values: readonly unknown[], d: number): void {
    for (let start = 0; start < keys.length; start += BATCH) {
      const stop = Math.min(keys.length, start + BATCH);
      if (stop - start > 1) this.byte(0x28);
      for (let i = start; i < stop; i++) {
        const k = keys[i];
        if (typeof k === "string") this.key(k, i);
        else this.save(k, d);
        this.save(values[i], d);
      }
      this.byte(stop - start > 1 ? 0x75 : 0x73);
    }
  }

  /**
   * A plain object's pairs, written as savePairs writes them, read by `for…in`: V8 reads each value from the
   * object's enum cache, where Object.keys + Object.values made two arrays per record. Counting first tells
   * whether a batch needs its MARK.
   */
  private objectPairs(v: Record<string, unknown>, d: number): void {
    let count = 0;
    for (const _ in v) count++;
    let i = 0;
    let marked = false;
    for (const k in v) {
      if (i % BATCH === 0) {
        if (i > 0) this.byte(marked ? 0x75 : 0x73);
        marked = count - i > 1;
        if (marked) this.byte(0x28);
      }
      this.key(k, i);
      const x = v[k];
      if (typeof x === "number") this.number(x);
      else this.save(x, d);
      i++;
    }
    if (i > 0) this.byte(marked ? 0x75 : 0x73);
  }

  /** The key at position i of a dict: records repeat their keys in order, so the last one seen there is checked first. */
  private key(k: string, i: number): void {
    if (i < KEY_SLOTS && this.keyAt[i] === k) {
      this.get(this.keyMemo[i]!);
      return;
    }
    this.str(k, true);
    const idx = this.strings.get(k);
    if (i < KEY_SLOTS && idx !== undefined) {
      this.keyAt[i] = k;
      this.keyMemo[i] = idx;
    }
  }

  private saveTuple(t: readonly unknown[], d: number): void {
    if (t.length === 0) {
      this.byte(0x29);
      return;
    }
    const small = t.length <= 3;
    if (!small) this.byte(0x28);
    for (const x of t) this.save(x, d);
    // a tuple reached again through its own items was written there already: drop ours, fetch that one
    const again = this.memo.get(t);
    if (again !== undefined) {
      if (small) for (let i = 0; i < t.length; i++) this.byte(0x30);
      else this.byte(0x31);
      this.get(again);
      return;
    }
    this.byte(small ? 0x84 + t.length : 0x74);
    this.memo.set(t, this.put());
  }

  /** Protocols 2–3 write a set or frozenset as GLOBAL + (list,) + REDUCE, as CPython does. */
  private reduceWithList(name: string, items: unknown[], d: number): void {
    this.global(this.builtins, name);
    this.byte(0x5d);
    this.memo.set(items, this.put());
    this.saveItems(items, d, 0x61, 0x65);
    this.byte2(0x85, 0x52);
  }
}

/** Objects with no Python equivalent, refused with what to send instead. */
function refuseObject(v: object): void {
  if (
    v instanceof Date ||
    v instanceof RegExp ||
    v instanceof Promise ||
    v instanceof WeakMap ||
    v instanceof WeakSet ||
    v instanceof ArrayBuffer ||
    ArrayBuffer.isView(v)
  ) {
    const hint =
      v instanceof Date
        ? "send date.toISOString() (Python: datetime.fromisoformat) or date.getTime() / 1000 (a timestamp)"
        : "convert it to plain data first";
    throw new PickleError(`cannot pickle a ${describe(v)}: ${hint}`);
  }
}
