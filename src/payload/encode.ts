// The pickle encoder: JS values (mapped as index.ts documents) → pickle protocol 5 by default, 2–4 on request,
// read back exactly by Python's pickle.loads and cloudpickle.loads.
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

/** A growable output buffer with the few writes the opcodes need. */
class Writer {
  buf = new Uint8Array(1024);
  dv = new DataView(this.buf.buffer);
  n = 0;

  ensure(extra: number): void {
    if (this.n + extra <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.n + extra) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
    this.dv = new DataView(next.buffer);
  }
  byte(b: number): void {
    this.ensure(1);
    this.buf[this.n++] = b;
  }
  byte2(a: number, b: number): void {
    this.ensure(2);
    this.buf[this.n++] = a;
    this.buf[this.n++] = b;
  }
  u32(v: number): void {
    this.ensure(4);
    this.dv.setUint32(this.n, v, true);
    this.n += 4;
  }
  u64(v: number): void {
    this.ensure(8);
    this.dv.setUint32(this.n, v % 4294967296, true);
    this.dv.setUint32(this.n + 4, Math.floor(v / 4294967296), true);
    this.n += 8;
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
}

/** Minimal little-endian two's complement bytes of an int (CPython's encode_long). */
function longBytes(v: bigint): Uint8Array {
  if (v === 0n) return new Uint8Array(0);
  const neg = v < 0n;
  // bits needed including the sign bit
  let hex = (neg ? -v - 1n : v).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  let n = hex.length / 2;
  if (Number.parseInt(hex.slice(0, 1), 16) >= 8) n++;
  let x = neg ? (1n << BigInt(8 * n)) + v : v;
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
}

function describe(v: unknown): string {
  if (typeof v === "object" && v !== null) return v.constructor?.name ?? "object";
  return typeof v;
}

/** Encodes a JS value as a pickle that Python reads back as the mapped Python value. */
export function encode(value: unknown, options: EncodeOptions = {}): Uint8Array {
  const protocol = options.protocol ?? 5;
  if (![2, 3, 4, 5].includes(protocol)) throw new PickleError(`unsupported pickle protocol: ${protocol}`);
  const maxDepth = options.maxDepth ?? MAX_DEPTH;
  const w = new Writer();
  const memo = new Map<object, number>();
  const strings = new Map<string, number>();
  let memoNext = 0;
  const builtins = protocol >= 3 ? "builtins" : "__builtin__";

  const put = (): number => {
    const idx = memoNext++;
    if (protocol >= 4) w.byte(0x94);
    else if (idx < 256) w.byte2(0x71, idx);
    else {
      w.byte(0x72);
      w.u32(idx);
    }
    return idx;
  };
  const get = (idx: number): void => {
    if (idx < 256) w.byte2(0x68, idx);
    else {
      w.byte(0x6a);
      w.u32(idx);
    }
  };
  const global = (module: string, name: string): void => {
    w.byte(0x63);
    w.ascii(`${module}\n${name}\n`);
  };

  const int = (v: number | bigint): void => {
    if (typeof v === "number" && v >= 0 && v < 256) w.byte2(0x4b, v);
    else if (typeof v === "number" && v >= 0 && v < 65536) {
      w.byte2(0x4d, v & 0xff);
      w.byte(v >> 8);
    } else if (v >= MIN_I32 && v <= MAX_I32) {
      w.byte(0x4a);
      w.ensure(4);
      w.dv.setInt32(w.n, Number(v), true);
      w.n += 4;
    } else if (typeof v === "number") {
      // a safe integer beyond int32: 5 to 7 bytes, written without BigInt
      let n = 1;
      let lim = 128;
      while (v >= lim || v < -lim) {
        n++;
        lim *= 256;
      }
      w.byte2(0x8a, n);
      w.ensure(n);
      // low 32 bits as uint32 (ToUint32 is exact mod 2^32), the rest a signed int32 (|hi| < 2^21)
      const lo = v >>> 0;
      const hi = (v - lo) / 4294967296;
      for (let i = 0; i < n; i++)
        w.buf[w.n++] = i < 4 ? (lo >>> (8 * i)) & 0xff : (hi >> (8 * (i - 4))) & 0xff;
    } else {
      const b = longBytes(v);
      if (b.length < 256) w.byte2(0x8a, b.length);
      else {
        w.byte(0x8b);
        w.u32(b.length);
      }
      w.bytes(b);
    }
  };
  const float = (v: number): void => {
    w.byte(0x47);
    w.ensure(8);
    w.dv.setFloat64(w.n, v, false);
    w.n += 8;
  };
  /** A str; dict keys are memoized (they repeat across records), other strings are written as they come. */
  const str = (s: string, memoize = false): void => {
    const known = memoize ? strings.get(s) : undefined;
    if (known !== undefined) {
      get(known);
      return;
    }
    const len = s.length;
    if (len < 256 && protocol >= 4) {
      // short ASCII straight into the buffer, the common case for dict keys and small values
      w.ensure(len + 2);
      const at = w.n;
      let i = 0;
      for (; i < len; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        w.buf[at + 2 + i] = c;
      }
      if (i === len) {
        w.buf[at] = 0x8c;
        w.buf[at + 1] = len;
        w.n = at + 2 + len;
        if (memoize && len > 1) strings.set(s, put());
        return;
      }
    }
    const b = encodeUtf8(s);
    if (b.length < 256 && protocol >= 4) w.byte2(0x8c, b.length);
    else if (b.length <= 0xffffffff) {
      w.byte(0x58);
      w.u32(b.length);
    } else if (protocol >= 4) {
      w.byte(0x8d);
      w.u64(b.length);
    } else throw new PickleError("str longer than 4 GiB needs protocol 4 or higher");
    w.bytes(b);
    if (memoize && len > 1) strings.set(s, put());
  };
  const rawBytes = (b: Uint8Array): void => {
    if (protocol < 3) {
      // protocol 2 has no bytes opcode: Python writes _codecs.encode(latin-1 text, "latin1")
      if (b.length === 0) {
        global(builtins, "bytes");
        w.byte2(0x29, 0x52);
        return;
      }
      global("_codecs", "encode");
      let s = "";
      for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096));
      str(s);
      str("latin1");
      w.byte2(0x86, 0x52);
      return;
    }
    if (b.length < 256) w.byte2(0x43, b.length);
    else if (b.length <= 0xffffffff) {
      w.byte(0x42);
      w.u32(b.length);
    } else {
      w.byte(0x8e);
      w.u64(b.length);
    }
    w.bytes(b);
  };

  const save = (v: unknown, depth: number): void => {
    switch (typeof v) {
      case "number":
        if (Number.isInteger(v) && v <= MAX_SAFE && v >= -MAX_SAFE && !Object.is(v, -0)) int(v);
        else float(v);
        return;
      case "string": {
        str(v);
        return;
      }
      case "boolean":
        w.byte(v ? 0x88 : 0x89);
        return;
      case "bigint": {
        int(v);
        return;
      }
      case "undefined":
        w.byte(0x4e);
        return;
      case "object":
        break;
      default:
        throw new PickleError(`cannot pickle a ${typeof v}: only plain data has a Python equivalent`);
    }
    if (v === null) {
      w.byte(0x4e);
      return;
    }
    if (isPyFloat(v)) {
      float(v.value);
      return;
    }
    const seen = memo.get(v);
    if (seen !== undefined) {
      get(seen);
      return;
    }
    if (depth > maxDepth) throw new PickleError(`value nests deeper than ${maxDepth} levels`);
    const d = depth + 1;

    if (Array.isArray(v)) {
      if (isTuple(v)) {
        saveTuple(v, d);
        return;
      }
      w.byte(0x5d);
      memo.set(v, put());
      saveItems(v, d, 0x61, 0x65);
      return;
    }
    if (v instanceof Uint8Array) {
      if (isByteArray(v)) {
        if (protocol >= 5) {
          w.byte(0x96);
          w.u64(v.length);
          w.bytes(v);
        } else {
          global(builtins, "bytearray");
          if (v.length === 0) w.byte(0x29);
          else {
            rawBytes(v);
            w.byte(0x85);
          }
          w.byte(0x52);
        }
      } else rawBytes(v);
      memo.set(v, put());
      return;
    }
    if (v instanceof Set) {
      const items = [...v];
      if (isFrozenSet(v)) {
        if (protocol >= 4) {
          w.byte(0x28);
          for (const x of items) save(x, d);
          const again = memo.get(v);
          if (again !== undefined) {
            w.byte(0x31);
            get(again);
            return;
          }
          w.byte(0x91);
        } else reduceWithList("frozenset", items, d);
      } else if (protocol >= 4) {
        w.byte(0x8f);
        memo.set(v, put());
        saveItems(items, d, -1, 0x90);
        return;
      } else reduceWithList("set", items, d);
      memo.set(v, put());
      return;
    }
    if (v instanceof Map) {
      w.byte(0x7d);
      memo.set(v, put());
      savePairs([...v.keys()], [...v.values()], d);
      return;
    }
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
    // plain objects (and class instances, like JSON) become dicts of their own enumerable string keys
    w.byte(0x7d);
    memo.set(v, put());
    // one native read of every value, in the keys' order (a lookup per key is megamorphic across records)
    savePairs(Object.keys(v), Object.values(v), d);
  };

  /** Items in batches of 1000, as Python writes them: MARK … many-op, or the single-item op for a batch of one. */
  const saveItems = (items: readonly unknown[], d: number, single: number, many: number): void => {
    for (let start = 0; start < items.length; start += BATCH) {
      const stop = Math.min(items.length, start + BATCH);
      const one = stop - start === 1 && single >= 0;
      if (!one) w.byte(0x28);
      for (let i = start; i < stop; i++) save(items[i], d);
      w.byte(one ? single : many);
    }
  };

  /** A dict's pairs in batches of 1000 (SETITEM for a batch of one); str keys are memoized. */
  const savePairs = (keys: readonly unknown[], values: readonly unknown[], d: number): void => {
    for (let start = 0; start < keys.length; start += BATCH) {
      const stop = Math.min(keys.length, start + BATCH);
      if (stop - start > 1) w.byte(0x28);
      for (let i = start; i < stop; i++) {
        const k = keys[i];
        if (typeof k === "string") key(k, i);
        else save(k, d);
        save(values[i], d);
      }
      w.byte(stop - start > 1 ? 0x75 : 0x73);
    }
  };

  /** The key at position i of a dict: records repeat their keys in order, so the last one seen there is checked first. */
  const keyAt: string[] = [];
  const keyMemo: number[] = [];
  const key = (k: string, i: number): void => {
    if (i < 64 && keyAt[i] === k) {
      get(keyMemo[i]!);
      return;
    }
    str(k, true);
    const idx = strings.get(k);
    if (i < 64 && idx !== undefined) {
      keyAt[i] = k;
      keyMemo[i] = idx;
    }
  };

  const saveTuple = (t: readonly unknown[], d: number): void => {
    if (t.length === 0) {
      w.byte(0x29);
      return;
    }
    const small = t.length <= 3;
    if (!small) w.byte(0x28);
    for (const x of t) save(x, d);
    // a tuple reached again through its own items was written there already: drop ours, fetch that one
    const again = memo.get(t);
    if (again !== undefined) {
      if (small) for (let i = 0; i < t.length; i++) w.byte(0x30);
      else w.byte(0x31);
      get(again);
      return;
    }
    w.byte(small ? 0x84 + t.length : 0x74);
    memo.set(t, put());
  };

  /** Protocols 2–3 write a set or frozenset as GLOBAL + (list,) + REDUCE, as CPython does. */
  const reduceWithList = (name: string, items: unknown[], d: number): void => {
    global(builtins, name);
    w.byte(0x5d);
    memo.set(items, put());
    saveItems(items, d, 0x61, 0x65);
    w.byte2(0x85, 0x52);
  };

  w.byte2(0x80, protocol);
  save(value, 0);
  w.byte(0x2e);
  return w.buf.slice(0, w.n);
}
