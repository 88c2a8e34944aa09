// The pickle decoder: protocols 0–5 as plain data uses them. It never imports, resolves or calls anything;
// allow-listed globals are applied from a table (globals.ts), every other global is refused by name.
import { Buffer } from "node:buffer";
import { oneByteString } from "./buffer-internals.js";
import { DeserializeTimeoutError, PickleError } from "./errors.js";
import { applyGlobal, GlobalRef, resolveGlobal, typeName } from "./globals.js";
import {
  CLOCK_CHECK_EVERY_OPS,
  DESERIALIZE_TIMEOUT_SECONDS,
  HIGHEST_PROTOCOL,
  MAX_COPIED_ITEMS,
  MAX_DEPTH,
  MAX_MEMO_ENTRIES,
  MIN_COPIED_ITEMS,
} from "./limits.js";
import {
  asciiStrict,
  cLine,
  normalizeInt,
  parseFloatText,
  parseIntText,
  parseLongText,
  parseQuotedString,
  pyInt,
  rawUnicodeEscape,
} from "./text.js";
import { decodeUtf8 } from "./utf8.js";
import {
  asByteArray,
  asFrozenSet,
  isFrozenSet,
  isPyFloat,
  isTuple,
  markTuple,
  PyFloat,
  setOwn,
  unhashableType,
} from "./values.js";

export interface DecodeOptions {
  /** Wall-clock budget; defaults to docs/toolkit.md §3.1's 30 s. */
  timeoutSeconds?: number;
  /** Millisecond clock, injectable so tests can make time pass. */
  now?: () => number;
  /** Deepest nesting accepted. */
  maxDepth?: number;
  /** Most memo entries accepted. */
  maxMemo?: number;
  /**
   * "PyFloat" (default): an integral float (1.0) is a PyFloat, so it is written back as float;
   * "number": every float is a plain number, as functions that do arithmetic want it.
   */
  floats?: "PyFloat" | "number";
}

const CLOCK_MASK = CLOCK_CHECK_EVERY_OPS - 1;
/** Memo chunks hold 2^12 entries (32 KiB of slots). */
const MEMO_CHUNK_BITS = 12;
const MEMO_CHUNK_MASK = (1 << MEMO_CHUNK_BITS) - 1;
const TWO_32 = 4294967296;

const truncated = (): PickleError => new PickleError("pickle data was truncated");
/** CPython's words for reaching below the stack's bottom, or below the innermost MARK while one is open. */
const underflow = (marks: readonly number[]): PickleError =>
  new PickleError(marks.length > 0 ? "unexpected MARK found" : "unpickling stack underflow");

/** CPython's TypeError for a dict key or set member that cannot be hashed. */
function checkHashable(v: unknown): void {
  if (typeof v !== "object" || v === null) return;
  const type = unhashableType(v);
  if (type !== undefined) throw new PickleError(`unhashable type: '${type}'`);
}

/** The largest memo index a PUT or GET may name (LONG_BINPUT's 4 bytes); CPython runs out of memory before it. */
const MAX_MEMO_INDEX = 0xffffffff;

/** Items the allow-listed constructors may copy for an input of `bytes` bytes (limits.ts says why). */
function copyBudget(bytes: number): number {
  return Math.min(MAX_COPIED_ITEMS, Math.max(MIN_COPIED_ITEMS, bytes));
}

/** An integral float in the safe range becomes a PyFloat so encode writes it back as float. */
function floatValue(v: number): number | PyFloat {
  return Number.isInteger(v) &&
    v <= Number.MAX_SAFE_INTEGER &&
    v >= -Number.MAX_SAFE_INTEGER &&
    !Object.is(v, -0)
    ? new PyFloat(v)
    : v;
}

/** The unsigned little-endian size argument of a 1-, 4- or 8-byte width at `pos`. */
function readSize(buf: Uint8Array, dv: DataView, pos: number, width: number): number {
  if (width === 1) return buf[pos]!;
  if (width === 4) return dv.getUint32(pos, true);
  return dv.getUint32(pos, true) + dv.getUint32(pos + 4, true) * TWO_32;
}

/** LONG1/LONG4 payload: little-endian two's complement of n bytes. */
function readLong(buf: Uint8Array, dv: DataView, pos: number, n: number): number | bigint {
  if (n === 0) return 0;
  if (n <= 6) {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < n; i++) {
      v += buf[pos + i]! * scale;
      scale *= 256;
    }
    return buf[pos + n - 1]! >= 0x80 ? v - scale : v;
  }
  if (n <= 8) {
    // 7 and 8 bytes (ns timestamps, 64-bit ids): two 32-bit halves, a number whenever the value is safe
    const lo = dv.getUint32(pos, true);
    let hi = 0;
    let scale = 1;
    for (let i = 4; i < n; i++) {
      hi += buf[pos + i]! * scale;
      scale *= 256;
    }
    if (buf[pos + n - 1]! >= 0x80) hi -= scale;
    // |hi| < 2^21 keeps hi * 2^32 + lo exact; -2^53 itself is not a safe integer
    if (hi >= -2097152 && hi < 2097152) {
      const v = hi * TWO_32 + lo;
      if (v >= -Number.MAX_SAFE_INTEGER) return v;
    }
    return BigInt(hi) * 4294967296n + BigInt(lo);
  }
  // big-endian hex, which V8 parses in linear time (a power-of-two radix)
  const bigEndian = Buffer.from(buf.subarray(pos, pos + n)).reverse();
  let big = BigInt(`0x${bigEndian.toString("hex")}`);
  if (buf[pos + n - 1]! >= 0x80) big -= 1n << BigInt(8 * n);
  return normalizeInt(big);
}

/**
 * Makes the plain objects that stand for dicts. A constructor (not `{}`) lets V8's slack tracking size them
 * for the keys records really have, so small dicts need no separate property store; the prototype is still
 * Object.prototype, so they are ordinary objects to every caller.
 */
const PlainDict = function PlainDict(this: object) {} as unknown as new () => Record<string, unknown>;
PlainDict.prototype = Object.prototype;

/** No str pushed yet: a value no stack slot can hold. */
const NO_STR: unknown = Symbol("no str");

/** A new empty dict object (EMPTY_DICT, DICT). */
function newDict(): Record<string, unknown> {
  return new PlainDict();
}

/** Removes the innermost MARK and returns the stack index it marked. */
function popMark(marks: number[]): number {
  const m = marks.pop();
  if (m === undefined) throw new PickleError("could not find MARK");
  return m;
}

/** The stack index of the innermost MARK left (0 with none). */
function topMark(marks: readonly number[]): number {
  const n = marks.length;
  return n > 0 ? marks[n - 1]! : 0;
}

/** Bytes of input per latin1 window: above V8's 128 KiB regular-object limit, so the window is never copied by a scavenge. */
const WINDOW = 1 << 12;

/**
 * The internalized twin of a memoized str (read back as a dict key in every record): stores into objects
 * then compare keys by identity, with no string-table lookup per store. Long strings are left alone.
 */
function intern(s: string): string {
  return s.length <= 64 ? (Object.keys({ [s]: 0 })[0] ?? s) : s;
}

/** A plain JS object that stands for a Python dict (what EMPTY_DICT and DICT create). */
function isDictObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

/**
 * Stores the n-th str-keyed pair of a dict. Each of the first sixteen positions has its own store site, so in
 * record-like data every site sees one key and one shape transition and its inline cache stays monomorphic,
 * instead of one megamorphic site for every key.
 */
function storeAt(d: Record<string, unknown>, n: number, k: string, v: unknown): void {
  switch (n) {
    case 0:
      d[k] = v;
      return;
    case 1:
      d[k] = v;
      return;
    case 2:
      d[k] = v;
      return;
    case 3:
      d[k] = v;
      return;
    case 4:
      d[k] = v;
      return;
    case 5:
      d[k] = v;
      return;
    case 6:
      d[k] = v;
      return;
    case 7:
      d[k] = v;
      return;
    case 8:
      d[k] = v;
      return;
    case 9:
      d[k] = v;
      return;
    case 10:
      d[k] = v;
      return;
    case 11:
      d[k] = v;
      return;
    case 12:
      d[k] = v;
      return;
    case 13:
      d[k] = v;
      return;
    case 14:
      d[k] = v;
      return;
    case 15:
      d[k] = v;
      return;
    default:
      d[k] = v;
  }
}

/** Stores the leading str-keyed pairs kv[from, to) into `d` and returns where it stopped (at a key that is not a plain str). */
function storeUnrolled(d: Record<string, unknown>, kv: readonly unknown[], from: number, to: number): number {
  let i = from;
  for (; i < to; i += 2) {
    const k = kv[i];
    if (typeof k !== "string" || k === "__proto__") return i;
    storeAt(d, (i - from) >> 1, k, kv[i + 1]);
  }
  return i;
}

/** Decodes one pickle. Throws PickleError (bad or refused input) or DeserializeTimeoutError. */
export function decode(input: Uint8Array, options: DecodeOptions = {}): unknown {
  return new Unpickler(input, options, true).run();
}

/** The stack machine alone, without the dict fast path: what differential tests compare `decode` with. */
export function decodeGeneral(input: Uint8Array, options: DecodeOptions = {}): unknown {
  return new Unpickler(input, options, false).run();
}

/**
 * One decode. State lives in fields and helpers are methods (stable call targets), so the optimizing
 * compiler keeps its code across calls. The value stack is an array with an explicit top (`sp`, a local of
 * the hot loop): pops only move `sp`, so there is no `length` write per opcode; slots above `sp` are stale
 * until overwritten and die with the decode.
 */
class Unpickler {
  private readonly buf: Uint8Array;
  private readonly dv: DataView;
  private readonly node: Buffer;
  private readonly now: () => number;
  private readonly timeoutSeconds: number;
  private readonly deadline: number;
  private readonly maxMemo: number;
  private readonly maxDepth: number;
  /** Integral floats become PyFloat (else plain numbers). */
  private readonly exactFloats: boolean;
  private readonly stack: unknown[] = [];
  /**
   * Memo values in fixed-size chunks: pickle's indices leave gaps (memoized strs are kept by range below),
   * and a store past the end of one growing holey array leaves V8's fast path; a store into a chunk made
   * at its full length never does. Only indices below 2 × entries + one chunk get chunks (what pickle's
   * sequential indices need), so a chunk's memory is always paid for by entries.
   */
  private readonly memo: (unknown[] | undefined)[] = [];
  /** Memo values at indices no chunk covers yet (a hostile pickle's far, scattered indices), by index as an int32. */
  private sparse: Map<number, unknown> | undefined = undefined;
  private memoCount = 0;
  private readonly tuples: unknown[][] = [];
  /** Whether an allow-listed global was pushed: STOP then makes sure none is part of the result. */
  private sawGlobal = false;
  /** The PROTO opcode's protocol (0 before one): Python 2 module names are mapped below protocol 3 only. */
  private proto = 0;
  /** Dicts that became Maps at their first non-str key: old object → Map. */
  private replaced: Map<object, Map<unknown, unknown>> | undefined = undefined;
  /**
   * Nesting depth of containers holding containers (absent = 1); checked as the graph is built. Strong tables
   * that die with the decode: V8's weak ones slow down superlinearly past ~2 million entries.
   */
  private readonly depths = new Map<object, number>();
  /** Containers pushed again by a memo get or DUP: if one grows later, depths seen by its holders may be stale. */
  private refetched: Set<object> | undefined = undefined;
  private stale = false;
  /** Items set(), bytes() and the like copied so far, and how many the input's size allows. */
  private readonly budget: { copied: number; max: number };
  /**
   * Memo entries that are strs just decoded from the input keep only their byte range (start + 1, 0 for
   * none) until a memo get reads them: pickle memoizes every str, records read back only their keys, and
   * typed arrays hold no pointers for the garbage collector to trace.
   */
  private memoStart = new Uint32Array(0);
  private memoEnd = new Uint32Array(0);
  /** A latin1 copy of input bytes [winStart, winEnd) that short ASCII strings are cut from. */
  private win = "";
  private winStart = 0;
  private winEnd = 0;

  constructor(
    input: Uint8Array,
    options: DecodeOptions,
    private readonly fastDicts: boolean,
  ) {
    // a plain Uint8Array view, so slice() copies even when the caller passed a Buffer
    this.buf = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
    this.dv = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.node = Buffer.from(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
    this.now = options.now ?? (() => performance.now());
    this.timeoutSeconds = options.timeoutSeconds ?? DESERIALIZE_TIMEOUT_SECONDS;
    this.deadline = this.now() + this.timeoutSeconds * 1000;
    this.maxMemo = options.maxMemo ?? MAX_MEMO_ENTRIES;
    this.maxDepth = options.maxDepth ?? MAX_DEPTH;
    this.exactFloats = options.floats !== "number";
    this.budget = { copied: 0, max: copyBudget(input.byteLength) };
  }

  run(): unknown {
    const buf = this.buf;
    const dv = this.dv;
    const st = this.stack;
    const marks: number[] = [];
    const end = buf.length;
    let sp = 0;
    /** Index of the innermost MARK: nothing below it is reachable. */
    let base = 0;
    let ops = 0;
    let pos = 0;
    // the str the last string opcode pushed and its bytes, so MEMOIZE right after it can keep just the range
    let lastStr: unknown = NO_STR;
    let lastStart = 0;
    let lastEnd = 0;
    /** The dict the last EMPTY_DICT made (its items usually follow right after a MARK). */
    let fresh: unknown = NO_STR;
    for (;;) {
      // CPython's EOFError at an opcode boundary; inside an opcode's argument the data was truncated
      if (pos >= end) throw new PickleError("Ran out of input");
      if ((++ops & CLOCK_MASK) === 0 && this.now() > this.deadline)
        throw new DeserializeTimeoutError(this.timeoutSeconds);
      const op = buf[pos++]!;
      switch (op) {
        case 0x80: {
          // PROTO
          if (pos + 1 > end) throw truncated();
          const p = buf[pos++]!;
          if (p > HIGHEST_PROTOCOL) throw new PickleError(`unsupported pickle protocol: ${p}`);
          this.proto = p;
          break;
        }
        case 0x95: {
          // FRAME: framing only groups opcodes; its length must fit in what is left
          if (pos + 8 > end) throw truncated();
          const len = readSize(buf, dv, pos, 8);
          pos += 8;
          if (len > end - pos) throw truncated();
          break;
        }
        case 0x2e: {
          // STOP
          if (sp <= base) throw underflow(marks);
          // what is left on the stack is dropped, as CPython drops it
          return this.finish(st[--sp]);
        }
        // ints
        case 0x4b: // BININT1
          if (pos + 1 > end) throw truncated();
          st[sp++] = buf[pos++]!;
          break;
        case 0x4d: // BININT2
          if (pos + 2 > end) throw truncated();
          st[sp++] = buf[pos]! | (buf[pos + 1]! << 8);
          pos += 2;
          break;
        case 0x4a: // BININT
          if (pos + 4 > end) throw truncated();
          st[sp++] = dv.getInt32(pos, true);
          pos += 4;
          break;
        case 0x8a: {
          // LONG1
          if (pos + 1 > end) throw truncated();
          const n = buf[pos++]!;
          if (n > end - pos) throw truncated();
          st[sp++] = readLong(buf, dv, pos, n);
          pos += n;
          break;
        }
        case 0x8b: {
          // LONG4
          if (pos + 4 > end) throw truncated();
          const n = dv.getInt32(pos, true);
          pos += 4;
          if (n < 0) throw new PickleError("LONG pickle has negative byte count");
          if (n > end - pos) throw truncated();
          st[sp++] = readLong(buf, dv, pos, n);
          pos += n;
          break;
        }
        case 0x49: {
          // INT (text); "00" and "01" are protocol 0's False and True
          const nl = lineEnd(buf, pos);
          if (nl === pos) throw truncated();
          st[sp++] = parseIntText(cLine(buf, pos, nl), nl - pos);
          pos = nl + 1;
          break;
        }
        case 0x4c: {
          // LONG (text)
          const nl = lineEnd(buf, pos);
          if (nl === pos) throw truncated();
          st[sp++] = parseLongText(cLine(buf, pos, nl, true));
          pos = nl + 1;
          break;
        }
        // floats
        case 0x47: // BINFLOAT
          if (pos + 8 > end) throw truncated();
          st[sp++] = this.float(dv.getFloat64(pos, false));
          pos += 8;
          break;
        case 0x46: {
          // FLOAT (text)
          const nl = lineEnd(buf, pos);
          if (nl === pos) throw truncated();
          st[sp++] = this.float(parseFloatText(cLine(buf, pos, nl)));
          pos = nl + 1;
          break;
        }
        // singletons
        case 0x4e: // NONE
          st[sp++] = null;
          break;
        case 0x88: // NEWTRUE
          st[sp++] = true;
          break;
        case 0x89: // NEWFALSE
          st[sp++] = false;
          break;
        // str
        case 0x8c: // SHORT_BINUNICODE
        case 0x58: // BINUNICODE
        case 0x8d: {
          // BINUNICODE8
          const width = op === 0x8c ? 1 : op === 0x58 ? 4 : 8;
          if (pos + width > end) throw truncated();
          const n = readSize(buf, dv, pos, width);
          pos += width;
          if (n > end - pos) throw truncated();
          const s = this.str(pos, pos + n);
          lastStr = s;
          lastStart = pos;
          lastEnd = pos + n;
          st[sp++] = s;
          pos += n;
          break;
        }
        case 0x56: {
          // UNICODE (text, raw-unicode-escape)
          const nl = lineEnd(buf, pos);
          st[sp++] = rawUnicodeEscape(buf, pos, nl);
          pos = nl + 1;
          break;
        }
        case 0x55: // SHORT_BINSTRING: a Python 2 str, read as ASCII like Python 3's default
        case 0x54: {
          // BINSTRING (its 4-byte size is signed)
          const width = op === 0x55 ? 1 : 4;
          if (pos + width > end) throw truncated();
          const n = width === 1 ? buf[pos]! : dv.getInt32(pos, true);
          pos += width;
          if (n < 0) throw new PickleError("BINSTRING pickle has negative byte count");
          if (n > end - pos) throw truncated();
          st[sp++] = asciiStrict(buf, pos, pos + n);
          pos += n;
          break;
        }
        case 0x53: {
          // STRING (text, quoted)
          const nl = lineEnd(buf, pos);
          st[sp++] = parseQuotedString(asciiStrict(buf, pos, nl));
          pos = nl + 1;
          break;
        }
        // bytes
        case 0x43: // SHORT_BINBYTES
        case 0x42: // BINBYTES
        case 0x8e: // BINBYTES8
        case 0x96: {
          // BYTEARRAY8
          const width = op === 0x43 ? 1 : op === 0x42 ? 4 : 8;
          if (pos + width > end) throw truncated();
          const n = readSize(buf, dv, pos, width);
          pos += width;
          if (n > end - pos) throw truncated();
          const b = copyBytes(buf, pos, pos + n);
          st[sp++] = op === 0x96 ? asByteArray(b) : b;
          pos += n;
          break;
        }
        // containers
        case 0x5d: // EMPTY_LIST
          st[sp++] = [];
          break;
        case 0x7d: // EMPTY_DICT
          fresh = newDict();
          st[sp++] = fresh;
          break;
        case 0x8f: // EMPTY_SET
          st[sp++] = new Set();
          break;
        case 0x29: // EMPTY_TUPLE
          st[sp++] = this.tuple([]);
          break;
        case 0x85: // TUPLE1
          if (sp - 1 < base) throw underflow(marks);
          st[sp - 1] = this.tuple([st[sp - 1]]);
          break;
        case 0x86: // TUPLE2
          if (sp - 2 < base) throw underflow(marks);
          sp -= 1;
          st[sp - 1] = this.tuple([st[sp - 1], st[sp]]);
          break;
        case 0x87: // TUPLE3
          if (sp - 3 < base) throw underflow(marks);
          sp -= 2;
          st[sp - 1] = this.tuple([st[sp - 1], st[sp], st[sp + 1]]);
          break;
        case 0x74: {
          // TUPLE
          const m = popMark(marks);
          base = topMark(marks);
          const items = st.slice(m, sp);
          sp = m;
          st[sp++] = this.tuple(items);
          break;
        }
        case 0x6c: {
          // LIST
          const m = popMark(marks);
          base = topMark(marks);
          const items = st.slice(m, sp);
          sp = m;
          this.grown(items, this.depthOfItems(items, 0, items.length, 1));
          st[sp++] = items;
          break;
        }
        case 0x64: {
          // DICT
          const m = popMark(marks);
          base = topMark(marks);
          if ((sp - m) % 2 !== 0) throw new PickleError("odd number of items for DICT");
          const kv = st.slice(m, sp);
          sp = m;
          st[sp++] = newDict();
          this.setItems(m, kv, 0, kv.length);
          break;
        }
        case 0x91: {
          // FROZENSET
          const m = popMark(marks);
          base = topMark(marks);
          const s = new Set<unknown>();
          for (let i = m; i < sp; i++) {
            checkHashable(st[i]);
            s.add(st[i]);
          }
          this.grown(s, this.depthOfItems(st, m, sp, 1));
          sp = m;
          st[sp++] = asFrozenSet(s);
          break;
        }
        case 0x61: {
          // APPEND
          if (sp - 2 < base) throw underflow(marks);
          const at = sp - 2;
          const l = this.listAt(at);
          l.push(st[at + 1]);
          this.grown(l, this.depthOfItems(st, at + 1, at + 2, 1));
          sp = at + 1;
          break;
        }
        case 0x65: {
          // APPENDS
          const m = popMark(marks);
          base = topMark(marks);
          if (m - 1 < base) throw underflow(marks);
          // no items: CPython does nothing, whatever lies below the MARK
          if (sp === m) break;
          const l = this.listAt(m - 1);
          let depth = 1;
          for (let i = m; i < sp; i++) {
            const v = st[i];
            l.push(v);
            if (typeof v === "object" && v !== null) {
              const c = this.itemDepth(v) + 1;
              if (c > depth) depth = c;
            }
          }
          if (depth > 1) this.grown(l, depth);
          sp = m;
          break;
        }
        case 0x73: {
          // SETITEM
          if (sp - 3 < base) throw underflow(marks);
          const at = sp - 3;
          this.setItems(at, st, at + 1, at + 3);
          sp = at + 1;
          break;
        }
        case 0x75: {
          // SETITEMS
          const m = popMark(marks);
          base = topMark(marks);
          if (m - 1 < base) throw underflow(marks);
          if (sp === m) break;
          if ((sp - m) % 2 !== 0) throw new PickleError("odd number of items for SETITEMS");
          this.setItems(m - 1, st, m, sp);
          sp = m;
          break;
        }
        case 0x90: {
          // ADDITEMS
          const m = popMark(marks);
          base = topMark(marks);
          if (m - 1 < base) throw underflow(marks);
          if (sp === m) break;
          const s = st[m - 1];
          if (!(s instanceof Set) || isFrozenSet(s)) {
            throw new PickleError(`ADDITEMS on a ${typeName(s)}: only a set takes items`);
          }
          for (let i = m; i < sp; i++) {
            checkHashable(st[i]);
            s.add(st[i]);
          }
          this.grown(s, this.depthOfItems(st, m, sp, 1));
          sp = m;
          break;
        }
        // stack and memo
        case 0x28: // MARK
          marks.push(sp);
          base = sp;
          // the items of a dict just made: scalar pairs go straight in, the rest is left to the loop (a DUP'd
          // copy of one that became a Map meanwhile is left to it too)
          if (
            sp > 0 &&
            st[sp - 1] === fresh &&
            this.fastDicts &&
            this.replaced?.has(fresh as object) !== true
          )
            pos = this.dictItems(fresh as Record<string, unknown>, pos);
          break;
        case 0x30: // POP: with nothing above the innermost MARK, Python drops the MARK itself
          if (sp === base && marks.length > 0) {
            popMark(marks);
            base = topMark(marks);
          } else {
            if (sp <= base) throw underflow(marks);
            sp--;
          }
          break;
        case 0x31: {
          // POP_MARK
          const m = popMark(marks);
          base = topMark(marks);
          sp = m;
          break;
        }
        case 0x32: {
          // DUP
          if (sp <= base) throw underflow(marks);
          const v = this.again(st[sp - 1]);
          st[sp++] = v;
          break;
        }
        case 0x94: {
          // MEMOIZE
          if (sp <= base) throw underflow(marks);
          const v = st[sp - 1];
          if (v === lastStr) this.memoPutRange(this.memoCount, lastStart, lastEnd, v);
          else this.memoPut(this.memoCount, v);
          break;
        }
        case 0x71: // BINPUT
          if (pos + 1 > end) throw truncated();
          if (sp <= base) throw underflow(marks);
          if (st[sp - 1] === lastStr) this.memoPutRange(buf[pos++]!, lastStart, lastEnd, lastStr);
          else this.memoPut(buf[pos++]!, st[sp - 1]);
          break;
        case 0x72: // LONG_BINPUT
          if (pos + 4 > end) throw truncated();
          if (sp <= base) throw underflow(marks);
          this.memoPut(dv.getUint32(pos, true), st[sp - 1]);
          pos += 4;
          break;
        case 0x70: {
          // PUT (text)
          const nl = lineEnd(buf, pos);
          if (nl === pos) throw truncated();
          const idx = pyInt(cLine(buf, pos, nl), 10);
          if (idx < 0n) throw new PickleError("negative PUT argument");
          if (sp <= base) throw underflow(marks);
          if (idx > MAX_MEMO_INDEX) throw new PickleError(`memo index ${idx} is too large`);
          this.memoPut(Number(idx), st[sp - 1]);
          pos = nl + 1;
          break;
        }
        case 0x68: {
          // BINGET
          if (pos + 1 > end) throw truncated();
          const v = this.memoGet(buf[pos++]!);
          st[sp++] = v;
          break;
        }
        case 0x6a: {
          // LONG_BINGET
          if (pos + 4 > end) throw truncated();
          const v = this.memoGet(dv.getUint32(pos, true));
          st[sp++] = v;
          pos += 4;
          break;
        }
        case 0x67: {
          // GET (text)
          const nl = lineEnd(buf, pos);
          if (nl === pos) throw truncated();
          const idx = pyInt(cLine(buf, pos, nl), 10);
          if (idx < 0n || idx > MAX_MEMO_INDEX) throw new PickleError(`Memo value not found at index ${idx}`);
          const v = this.memoGet(Number(idx));
          st[sp++] = v;
          pos = nl + 1;
          break;
        }
        // globals: only the allow-list, applied by REDUCE
        case 0x63:
        case 0x69: {
          // GLOBAL, and INST which names its class the same way (refused below)
          const nl1 = lineEnd(buf, pos);
          const module = decodeUtf8(buf, this.node, pos, nl1);
          const nl2 = lineEnd(buf, nl1 + 1);
          const name = decodeUtf8(buf, this.node, nl1 + 1, nl2);
          pos = nl2 + 1;
          const ref = resolveGlobal(module, name, this.proto);
          if (op === 0x69) return refuse("INST");
          st[sp++] = ref;
          this.sawGlobal = true;
          break;
        }
        case 0x93: {
          // STACK_GLOBAL
          if (sp - 2 < base) throw underflow(marks);
          const name = st[--sp];
          const module = st[--sp];
          if (typeof module !== "string" || typeof name !== "string") {
            throw new PickleError("STACK_GLOBAL requires str");
          }
          st[sp++] = resolveGlobal(module, name, this.proto);
          this.sawGlobal = true;
          break;
        }
        case 0x52: {
          // REDUCE
          if (sp - 2 < base) throw underflow(marks);
          const args = st[--sp];
          const fn = st[--sp];
          if (!(fn instanceof GlobalRef)) {
            throw new PickleError(`REDUCE can only apply an allow-listed global, not a ${typeName(fn)}`);
          }
          if (!Array.isArray(args) || !isTuple(args))
            throw new PickleError("REDUCE arguments must be a tuple");
          const made = applyGlobal(fn, args, this.budget);
          if (made instanceof Set) this.grown(made, this.depthOf(args[0]));
          st[sp++] = made;
          break;
        }
        case 0x81: // NEWOBJ
        case 0x92: // NEWOBJ_EX
        case 0x6f: // OBJ
        case 0x62: {
          // BUILD
          const name = { 129: "NEWOBJ", 146: "NEWOBJ_EX", 111: "OBJ", 98: "BUILD" }[op];
          const g = st.slice(0, sp).find((v) => v instanceof GlobalRef);
          return refuse(
            `opcode ${name} builds an object${g instanceof GlobalRef ? ` of ${g.module}.${g.qualname}` : ""}`,
          );
        }
        case 0x50: // PERSID
        case 0x51: // BINPERSID
          return refuse("persistent IDs (PERSID) refer to objects outside the pickle");
        case 0x82: // EXT1
        case 0x83: // EXT2
        case 0x84: // EXT4
          return refuse("extension codes (EXT) name registered globals");
        case 0x97: // NEXT_BUFFER
        case 0x98: // READONLY_BUFFER
          return refuse("out-of-band buffers (NEXT_BUFFER) are not part of the payload");
        default:
          throw new PickleError(
            `invalid load key, '${op >= 0x20 && op < 0x7f && op !== 0x27 && op !== 0x5c ? String.fromCharCode(op) : `\\x${op.toString(16).padStart(2, "0")}`}'.`,
          );
      }
    }
  }

  /** Bytes [start, end) as a str: short ASCII is cut from a latin1 window or copied natively, the rest goes through decodeUtf8. */
  private str(start: number, end: number): string {
    const n = end - start;
    if (n > 64 || !this.ascii(start, end)) return decodeUtf8(this.buf, this.node, start, end);
    // under V8's sliced-string minimum (13) substring copies, so results never keep the window alive
    if (n < 13) {
      if (start < this.winStart || end > this.winEnd) this.slide(start);
      return this.win.substring(start - this.winStart, end - this.winStart);
    }
    return oneByteString(this.node, start, end);
  }

  /** Whether bytes [start, end) are all ASCII, four at a time. */
  private ascii(start: number, end: number): boolean {
    const dv = this.dv;
    let i = start;
    for (; i + 4 <= end; i += 4) if ((dv.getUint32(i) & 0x80808080) !== 0) return false;
    const buf = this.buf;
    for (; i < end; i++) if (buf[i]! >= 0x80) return false;
    return true;
  }

  /** Moves the latin1 window to start at `start`; its size puts it in V8's large-object space (never copied by GC). */
  private slide(start: number): void {
    this.winStart = start;
    this.winEnd = Math.min(this.buf.length, start + WINDOW);
    this.win = oneByteString(this.node, start, this.winEnd);
  }

  private tuple(items: unknown[]): unknown[] {
    markTuple(items);
    this.tuples.push(items);
    this.grown(items, this.depthOfItems(items, 0, items.length, 1));
    return items;
  }

  /** The value at memo index idx: its chunk's slot, else (set before that chunk was made) the sparse map's. */
  private memoValue(idx: number): unknown {
    const chunk = this.memo[idx >>> MEMO_CHUNK_BITS];
    const v = chunk === undefined ? undefined : chunk[idx & MEMO_CHUNK_MASK];
    return v !== undefined || this.sparse === undefined ? v : this.sparse.get(idx | 0);
  }

  /** Stores (or, with undefined, clears) memo index idx; a chunk is made only for an index the entries justify. */
  private setMemoValue(idx: number, value: unknown): void {
    let chunk = this.memo[idx >>> MEMO_CHUNK_BITS];
    if (chunk === undefined && value !== undefined && idx < 2 * this.memoCount + MEMO_CHUNK_MASK + 1) {
      chunk = new Array(MEMO_CHUNK_MASK + 1);
      this.memo[idx >>> MEMO_CHUNK_BITS] = chunk;
    }
    // a value the sparse map holds for idx is stale once the index is stored again
    if (this.sparse !== undefined && (chunk !== undefined || value === undefined))
      this.sparse.delete(idx | 0);
    if (chunk !== undefined) chunk[idx & MEMO_CHUNK_MASK] = value;
    else if (value !== undefined) {
      this.sparse ??= new Map();
      this.sparse.set(idx | 0, value);
    }
  }

  private memoPut(idx: number, value: unknown): void {
    const ranged = idx < this.memoStart.length && this.memoStart[idx] !== 0;
    if (!ranged && this.memoValue(idx) === undefined && ++this.memoCount > this.maxMemo) {
      throw new PickleError(`pickle memo exceeds ${this.maxMemo} entries`);
    }
    if (ranged) this.memoStart[idx] = 0;
    this.setMemoValue(idx, value);
  }

  /** Memoizes the str `value` decoded from bytes [start, end) by its range (the value itself when that cannot be kept). */
  private memoPutRange(idx: number, start: number, end: number, value: unknown): void {
    let cap = this.memoStart.length;
    if (idx >= cap) {
      // grow by doubling only for indices near the end, so a far index cannot make a huge array
      if (idx >= Math.max(1024, cap * 2) || end >= 0xffffffff) {
        this.memoPut(idx, value);
        return;
      }
      cap = Math.max(1024, cap * 2);
      const s = new Uint32Array(cap);
      s.set(this.memoStart);
      const e = new Uint32Array(cap);
      e.set(this.memoEnd);
      this.memoStart = s;
      this.memoEnd = e;
    }
    if (this.memoStart[idx] === 0) {
      if (this.memoValue(idx) === undefined) {
        if (++this.memoCount > this.maxMemo)
          throw new PickleError(`pickle memo exceeds ${this.maxMemo} entries`);
      } else this.setMemoValue(idx, undefined);
    } else if (this.memoValue(idx) !== undefined) this.setMemoValue(idx, undefined);
    this.memoStart[idx] = start + 1;
    this.memoEnd[idx] = end;
  }

  private memoGet(idx: number): unknown {
    const v = this.memoValue(idx);
    if (v === undefined) {
      const s = this.memoRange(idx);
      if (s === undefined) throw new PickleError(`Memo value not found at index ${idx}`);
      return s;
    }
    return typeof v === "object" && v !== null ? this.again(v) : v;
  }

  /** A memoized str kept by range, decoded once on first read and kept interned (memo'd strs are usually dict keys). */
  private memoRange(idx: number): string | undefined {
    const start = idx < this.memoStart.length ? this.memoStart[idx]! : 0;
    if (start === 0) return undefined;
    const s = intern(this.str(start - 1, this.memoEnd[idx]!));
    this.setMemoValue(idx, s);
    return s;
  }

  /** The str at memo index idx, without the side effects of a get; undefined for anything else. */
  private memoKey(idx: number): string | undefined {
    const v = this.memoValue(idx);
    if (v === undefined) return this.memoRange(idx);
    return typeof v === "string" ? v : undefined;
  }

  /**
   * Reads the items of a dict just made, from `pos` right after its MARK, when they are all in the form
   * records use: `(BINGET key, scalar value [MEMOIZE])* SETITEMS`, values being ints, floats, bools, None or
   * short strs. No op of that form consumes another's result, so each pair can go straight into the dict, in
   * the stream's order (memo puts and gets included): the result is the stack machine's. It stops at the
   * SETITEMS (which then finds no items), or earlier at a key that is not a plain str, from where the loop
   * reads the rest; when the items are not all of that form it reads nothing.
   */
  private dictItems(d: Record<string, unknown>, from: number): number {
    if (!simpleItems(this.buf, from)) return from;
    const buf = this.buf;
    const dv = this.dv;
    let pos = from;
    for (let n = 0; ; n++) {
      if ((n & CLOCK_MASK) === CLOCK_MASK && this.now() > this.deadline)
        throw new DeserializeTimeoutError(this.timeoutSeconds);
      const kop = buf[pos]!;
      if (kop === 0x75) return pos; // SETITEMS
      const k = this.memoKey(kop === 0x68 ? buf[pos + 1]! : dv.getUint32(pos + 1, true));
      if (k === undefined || k === "__proto__") return pos;
      pos += kop === 0x68 ? 2 : 5;
      // bounds were checked by simpleItems
      let v: unknown;
      switch (buf[pos++]) {
        case 0x4b: // BININT1
          v = buf[pos++]!;
          break;
        case 0x4d: // BININT2
          v = buf[pos]! | (buf[pos + 1]! << 8);
          pos += 2;
          break;
        case 0x4a: // BININT
          v = dv.getInt32(pos, true);
          pos += 4;
          break;
        case 0x8a: {
          // LONG1
          const len = buf[pos++]!;
          v = readLong(buf, dv, pos, len);
          pos += len;
          break;
        }
        case 0x47: // BINFLOAT
          v = this.float(dv.getFloat64(pos, false));
          pos += 8;
          break;
        case 0x88: // NEWTRUE
          v = true;
          break;
        case 0x89: // NEWFALSE
          v = false;
          break;
        case 0x4e: // NONE
          v = null;
          break;
        default: {
          // SHORT_BINUNICODE, and the MEMOIZE that usually follows
          const len = buf[pos++]!;
          const s = this.str(pos, pos + len);
          pos += len;
          if (buf[pos] === 0x94) {
            this.memoPutRange(this.memoCount, pos - len, pos, s);
            pos++;
          }
          v = s;
        }
      }
      storeAt(d, n, k, v);
    }
  }

  /** A value pushed again while referenced elsewhere (memo get, DUP): the one to push. */
  private again(value: unknown): unknown {
    let v = value;
    if (typeof v === "object" && v !== null) {
      if (!(v instanceof GlobalRef)) {
        if (this.replaced !== undefined) v = this.replaced.get(v) ?? v;
        this.refetched ??= new Set();
        this.refetched.add(v as object);
      }
    }
    return v;
  }

  private float(v: number): number | PyFloat {
    return this.exactFloats ? floatValue(v) : v;
  }

  /** Depth a value adds to its holder: 0 for scalars, bytes and PyFloat, else the container's own depth. */
  private itemDepth(v: object): number {
    if (isPyFloat(v)) return 0;
    const known = this.depths.get(v);
    if (known !== undefined) return known;
    return v instanceof Uint8Array ? 0 : 1;
  }

  private depthOf(v: unknown): number {
    return typeof v === "object" && v !== null ? this.itemDepth(v) : 0;
  }

  /** 1 + the deepest of items[from, to), at least `floor`. */
  private depthOfItems(items: readonly unknown[], from: number, to: number, floor: number): number {
    let d = floor;
    for (let i = from; i < to; i++) {
      const v = items[i];
      if (typeof v === "object" && v !== null) {
        const c = this.itemDepth(v) + 1;
        if (c > d) d = c;
      }
    }
    return d;
  }

  /** Records a container's depth after it was built or given items; refuses nesting beyond the limit. */
  private grown(container: object, depth: number): void {
    if (depth <= 1) return;
    const old = this.depths.get(container) ?? 1;
    if (depth <= old) return;
    if (depth > this.maxDepth) throw new PickleError(`pickle nests deeper than ${this.maxDepth} levels`);
    this.depths.set(container, depth);
    // a container that grows after being referenced again may sit in holders whose depth is now too low
    if (this.refetched?.has(container)) this.stale = true;
  }

  private listAt(at: number): unknown[] {
    const l = this.stack[at];
    if (!Array.isArray(l) || isTuple(l))
      throw new PickleError(`APPEND on a ${typeName(l)}: only a list takes items`);
    return l;
  }

  /** The dict at stack[at], the Map it became if it did (and now in its slot). */
  private current(at: number): unknown {
    const d = this.stack[at];
    const m = typeof d === "object" && d !== null ? this.replaced?.get(d) : undefined;
    if (m === undefined) return d;
    this.stack[at] = m;
    return m;
  }

  /** Stores the pairs kv[from, to) into the dict at stack[at], turning it into a Map at the first non-str key. */
  private setItems(at: number, kv: readonly unknown[], from: number, to: number): void {
    // a copy DUP left on the stack before the dict became a Map still names the old object
    const d = this.replaced === undefined ? this.stack[at] : this.current(at);
    let i = from;
    let depth = 1;
    if (isDictObject(d)) {
      i = storeUnrolled(d, kv, i, to);
      for (; i < to; i += 2) {
        const key = kv[i];
        if (typeof key !== "string") break;
        setOwn(d, key, kv[i + 1]);
      }
      for (let j = from + 1; j < i; j += 2) {
        const value = kv[j];
        if (typeof value === "object" && value !== null) {
          const c = this.itemDepth(value) + 1;
          if (c > depth) depth = c;
        }
      }
      if (i < to) {
        const m = new Map<unknown, unknown>(Object.entries(d));
        this.replaced ??= new Map();
        this.replaced.set(d, m);
        const known = this.depths.get(d);
        if (known !== undefined) this.depths.set(m, known);
        if (this.refetched?.has(d)) this.refetched.add(m);
        this.stack[at] = m;
        for (; i < to; i += 2) {
          checkHashable(kv[i]);
          m.set(kv[i], kv[i + 1]);
        }
        depth = this.depthOfItems(kv, from, to, 1);
      }
    } else if (d instanceof Map) {
      for (; i < to; i += 2) {
        checkHashable(kv[i]);
        d.set(kv[i], kv[i + 1]);
      }
      depth = this.depthOfItems(kv, from, to, 1);
    } else {
      throw new PickleError(`SETITEM on a ${typeName(d)}: only a dict takes items`);
    }
    if (depth > 1) this.grown(this.stack[at] as object, depth);
  }

  /**
   * After STOP: swap dicts that became Maps wherever the old object was referenced, freeze tuples, and
   * walk the graph for its depth only when a re-referenced container grew (depths seen so far may be low).
   */
  private finish(root: unknown): unknown {
    let result = root;
    if (this.replaced !== undefined) {
      if (typeof result === "object" && result !== null) result = this.replaced.get(result) ?? result;
      fixReferences(result, this.replaced);
    }
    for (const t of this.tuples) Object.freeze(t);
    // an allow-listed global is data only once called; one left uncalled in the result is a class, not data
    if (result instanceof GlobalRef || (this.sawGlobal && holdsGlobal(result)))
      throw new PickleError("the pickle uses a global (set, bytes, …) as a value instead of calling it");
    if (this.stale) checkDepth(result, this.maxDepth, this.now, this.deadline, this.timeoutSeconds);
    return result;
  }
}

/**
 * Whether the bytes from `from` are dict items of the simple form up to a SETITEMS: a BINGET or LONG_BINGET,
 * then a scalar (BININT1/2, BININT, LONG1, BINFLOAT, NEWTRUE, NEWFALSE, NONE, or SHORT_BINUNICODE with an
 * optional MEMOIZE), repeated, every argument inside the input. Reads bytes only.
 */
function simpleItems(buf: Uint8Array, from: number): boolean {
  const end = buf.length;
  let pos = from;
  for (;;) {
    if (pos >= end) return false;
    const op = buf[pos]!;
    if (op === 0x75) return true;
    if (op === 0x68) pos += 2;
    else if (op === 0x6a) pos += 5;
    else return false;
    if (pos >= end) return false;
    switch (buf[pos++]) {
      case 0x4b:
        pos += 1;
        break;
      case 0x4d:
        pos += 2;
        break;
      case 0x4a:
        pos += 4;
        break;
      case 0x47:
        pos += 8;
        break;
      case 0x88:
      case 0x89:
      case 0x4e:
        break;
      case 0x8a:
        if (pos >= end) return false;
        pos += 1 + buf[pos]!;
        break;
      case 0x8c:
        if (pos >= end) return false;
        pos += 1 + buf[pos]!;
        if (pos < end && buf[pos] === 0x94) pos++;
        break;
      default:
        return false;
    }
  }
}

/** Copies of at least this many bytes skip the zero-fill of their new memory. */
const UNFILLED_COPY = 4096;

/** Bytes [start, end) in memory of their own; a large copy is not zero-filled first (slice's memory is). */
function copyBytes(buf: Uint8Array, start: number, end: number): Uint8Array {
  const n = end - start;
  if (n < UNFILLED_COPY) return buf.slice(start, end);
  const out = new Uint8Array(Buffer.allocUnsafeSlow(n).buffer, 0, n);
  out.set(buf.subarray(start, end));
  return out;
}

/** Index of the newline that ends a text argument starting at `pos`. */
function lineEnd(buf: Uint8Array, pos: number): number {
  const nl = buf.indexOf(0x0a, pos);
  if (nl < 0) throw truncated();
  return nl;
}

function refuse(what: string): never {
  throw new PickleError(
    `${what}; this worker only decodes plain data and never builds objects or calls code`,
  );
}

/** Children of a decoded container (the values a walk must visit). */
function forEachChild(node: object, fn: (child: unknown) => void): void {
  if (Array.isArray(node) || node instanceof Set) for (const c of node) fn(c);
  else if (node instanceof Map)
    for (const [k, v] of node) {
      fn(k);
      fn(v);
    }
  else if (!(node instanceof Uint8Array) && !isPyFloat(node))
    for (const k in node) fn((node as Record<string, unknown>)[k]);
}

/** Whether an uncalled global is anywhere in the graph (walked only for pickles that named one). */
function holdsGlobal(root: unknown): boolean {
  if (typeof root !== "object" || root === null) return false;
  const seen = new Set<object>([root]);
  const todo: object[] = [root];
  let found = false;
  while (todo.length > 0 && !found) {
    forEachChild(todo.pop()!, (c) => {
      if (c instanceof GlobalRef) found = true;
      else if (typeof c === "object" && c !== null && !seen.has(c)) {
        seen.add(c);
        todo.push(c);
      }
    });
  }
  return found;
}

function fixReferences(root: unknown, replaced: Map<object, Map<unknown, unknown>>): void {
  if (typeof root !== "object" || root === null) return;
  const seen = new Set<object>([root]);
  const todo: object[] = [root];
  const swap = (v: unknown): unknown => (typeof v === "object" && v !== null ? (replaced.get(v) ?? v) : v);
  while (todo.length > 0) {
    const node = todo.pop()!;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) node[i] = swap(node[i]);
    } else if (node instanceof Map) {
      // values only, in place: a dict is unhashable, so no key or set member (at any depth) can be one
      for (const [k, v] of node) {
        const s = swap(v);
        if (s !== v) node.set(k, s);
      }
    } else if (!(node instanceof Set) && !(node instanceof Uint8Array) && !isPyFloat(node)) {
      const rec = node as Record<string, unknown>;
      for (const k of Object.keys(rec)) {
        const v = rec[k];
        const s = swap(v);
        if (s !== v) setOwn(rec, k, s);
      }
    }
    forEachChild(node, (c) => {
      // sets (frozen or not) and bytes never hold a dict: not walked, however many there are
      if (
        typeof c === "object" &&
        c !== null &&
        !(c instanceof Set) &&
        !(c instanceof Uint8Array) &&
        !seen.has(c)
      ) {
        seen.add(c);
        todo.push(c);
      }
    });
  }
}

/** Walks the graph once (each container at its first-found depth) and refuses nesting beyond the limit. */
function checkDepth(
  root: unknown,
  limit: number,
  now: () => number,
  deadline: number,
  timeoutSeconds: number,
): void {
  if (typeof root !== "object" || root === null) return;
  const seen = new Set<object>([root]);
  const nodes: object[] = [root];
  const depths: number[] = [1];
  let steps = 0;
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const d = depths.pop()!;
    if (d > limit) throw new PickleError(`pickle nests deeper than ${limit} levels`);
    if ((++steps & CLOCK_MASK) === 0 && now() > deadline) throw new DeserializeTimeoutError(timeoutSeconds);
    forEachChild(node, (c) => {
      if (typeof c === "object" && c !== null && !seen.has(c)) {
        seen.add(c);
        nodes.push(c);
        depths.push(d + 1);
      }
    });
  }
}
