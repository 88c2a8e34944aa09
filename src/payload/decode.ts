// The pickle decoder: protocols 0–5 as plain data uses them. It never imports, resolves or calls anything;
// allow-listed globals are applied from a table (globals.ts), every other global is refused by name.
import { Buffer } from "node:buffer";
import { DeserializeTimeoutError, PickleError } from "./errors.js";
import { applyGlobal, GlobalRef, resolveGlobal, typeName } from "./globals.js";
import {
  CLOCK_CHECK_EVERY_OPS,
  DESERIALIZE_TIMEOUT_SECONDS,
  HIGHEST_PROTOCOL,
  MAX_COPIED_ITEMS,
  MAX_DEPTH,
  MAX_MEMO_ENTRIES,
} from "./limits.js";
import {
  asciiStrict,
  normalizeInt,
  parseFloatText,
  parseIntText,
  parseQuotedString,
  rawUnicodeEscape,
} from "./text.js";
import { decodeUtf8 } from "./utf8.js";
import { asByteArray, asFrozenSet, isFrozenSet, isTuple, markTuple, PyFloat } from "./values.js";

export interface DecodeOptions {
  /** Wall-clock budget; defaults to flash-toolkit.md §3.1's 30 s. */
  timeoutSeconds?: number;
  /** Millisecond clock, injectable so tests can make time pass. */
  now?: () => number;
  /** Deepest nesting accepted. */
  maxDepth?: number;
  /** Most memo entries accepted. */
  maxMemo?: number;
}

const CLOCK_MASK = CLOCK_CHECK_EVERY_OPS - 1;
const TWO_32 = 4294967296;

const truncated = (): PickleError => new PickleError("pickle data was truncated");
const underflow = (): PickleError => new PickleError("unpickling stack underflow");

/** An integral float in the safe range becomes a PyFloat so encode writes it back as float. */
function floatValue(v: number): number | PyFloat {
  return Number.isInteger(v) &&
    v <= Number.MAX_SAFE_INTEGER &&
    v >= -Number.MAX_SAFE_INTEGER &&
    !Object.is(v, -0)
    ? new PyFloat(v)
    : v;
}

/** LONG1/LONG4 payload: little-endian two's complement of n bytes. */
function readLong(buf: Uint8Array, pos: number, n: number): number | bigint {
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
  let hex = "";
  for (let i = n - 1; i >= 0; i--) {
    const b = buf[pos + i]!;
    hex += (b < 16 ? "0" : "") + b.toString(16);
  }
  let big = BigInt(`0x${hex}`);
  if (buf[pos + n - 1]! >= 0x80) big -= 1n << BigInt(8 * n);
  return normalizeInt(big);
}

/** A plain JS object that stands for a Python dict (what EMPTY_DICT and DICT create). */
function isDictObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  // "__proto__" as a plain assignment would replace the object's prototype; define it as data instead
  if (key === "__proto__")
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/** Decodes one pickle. Throws PickleError (bad or refused input) or DeserializeTimeoutError. */
export function decode(input: Uint8Array, options: DecodeOptions = {}): unknown {
  // a plain Uint8Array view, so slice() copies even when the caller passed a Buffer
  const buf = new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  const end = buf.length;
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const node = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const now = options.now ?? (() => performance.now());
  const timeoutSeconds = options.timeoutSeconds ?? DESERIALIZE_TIMEOUT_SECONDS;
  const deadline = now() + timeoutSeconds * 1000;
  const maxMemo = options.maxMemo ?? MAX_MEMO_ENTRIES;
  const maxDepth = options.maxDepth ?? MAX_DEPTH;

  const stack: unknown[] = [];
  const marks: number[] = [];
  let base = 0; // index of the innermost MARK: nothing below it is reachable
  const memo: unknown[] = [];
  let memoCount = 0;
  const tuples: unknown[][] = [];
  let containers = 0;
  let liveGlobals = 0;
  let replaced: Map<object, Map<unknown, unknown>> | undefined;
  const budget = { copied: 0, max: MAX_COPIED_ITEMS };
  let ops = 0;
  let pos = 0;

  const need = (n: number): void => {
    if (n > end - pos) throw truncated();
  };
  const readLine = (): number => {
    const nl = buf.indexOf(0x0a, pos);
    if (nl < 0) throw truncated();
    return nl;
  };
  const lineText = (): string => {
    const nl = readLine();
    const s = asciiStrict(buf, pos, nl);
    pos = nl + 1;
    return s;
  };
  const utf8Line = (): string => {
    const nl = readLine();
    const s = decodeUtf8(buf, node, pos, nl);
    pos = nl + 1;
    return s;
  };
  const popMark = (): number => {
    const m = marks.pop();
    if (m === undefined) throw new PickleError("could not find MARK");
    base = marks.length > 0 ? marks[marks.length - 1]! : 0;
    return m;
  };
  const pop = (): unknown => {
    if (stack.length <= base) throw underflow();
    return stack.pop();
  };
  const top = (): unknown => {
    if (stack.length <= base) throw underflow();
    return stack[stack.length - 1];
  };
  const makeTuple = (items: unknown[]): unknown[] => {
    markTuple(items);
    tuples.push(items);
    containers++;
    return items;
  };
  const memoPut = (idx: number): void => {
    const v = top();
    if (memo[idx] === undefined) {
      if (++memoCount > maxMemo) throw new PickleError(`pickle memo exceeds ${maxMemo} entries`);
    }
    memo[idx] = v;
  };
  const memoGet = (idx: number): void => {
    let v = memo[idx];
    if (v === undefined) throw new PickleError(`Memo value not found at index ${idx}`);
    if (typeof v === "object" && v !== null) {
      if (v instanceof GlobalRef) liveGlobals++;
      else if (replaced !== undefined) v = replaced.get(v) ?? v;
    }
    stack.push(v);
  };
  const discard = (from: number): void => {
    for (let i = from; i < stack.length; i++) if (stack[i] instanceof GlobalRef) liveGlobals--;
    stack.length = from;
  };
  /** Stores key → value into the dict at stack[at], turning it into a Map at the first non-str key. */
  const setItem = (at: number, key: unknown, value: unknown): void => {
    const d = stack[at];
    if (d instanceof Map) {
      d.set(key, value);
    } else if (isDictObject(d)) {
      if (typeof key === "string") {
        setOwn(d, key, value);
      } else {
        const m = new Map<unknown, unknown>(Object.entries(d));
        m.set(key, value);
        replaced ??= new Map();
        replaced.set(d, m);
        stack[at] = m;
      }
    } else {
      throw new PickleError(`SETITEM on a ${typeName(d)}: only a dict takes items`);
    }
  };
  const listAt = (at: number): unknown[] => {
    const l = stack[at];
    if (!Array.isArray(l) || isTuple(l))
      throw new PickleError(`APPEND on a ${typeName(l)}: only a list takes items`);
    return l;
  };
  const refuse = (what: string): never => {
    throw new PickleError(
      `${what}; this worker only decodes plain data and never builds objects or calls code`,
    );
  };

  if (end === 0) throw new PickleError("Ran out of input");
  for (;;) {
    if (pos >= end) throw truncated();
    if ((++ops & CLOCK_MASK) === 0 && now() > deadline) throw new DeserializeTimeoutError(timeoutSeconds);
    const op = buf[pos++]!;
    switch (op) {
      case 0x80: {
        // PROTO
        need(1);
        const p = buf[pos++]!;
        if (p > HIGHEST_PROTOCOL) throw new PickleError(`unsupported pickle protocol: ${p}`);
        break;
      }
      case 0x95: {
        // FRAME: framing only groups opcodes; its length must fit in what is left
        need(8);
        const len = dv.getUint32(pos, true) + dv.getUint32(pos + 4, true) * TWO_32;
        pos += 8;
        if (len > end - pos) throw truncated();
        break;
      }
      case 0x2e: {
        // STOP
        const result = pop();
        if (liveGlobals > 0 || result instanceof GlobalRef) {
          throw new PickleError("the pickle uses a global (set, bytes, …) as a value instead of calling it");
        }
        return finish(
          result,
          tuples,
          replaced,
          containers > maxDepth ? maxDepth : 0,
          now,
          deadline,
          timeoutSeconds,
        );
      }
      // ints
      case 0x4b: // BININT1
        need(1);
        stack.push(buf[pos++]!);
        break;
      case 0x4d: // BININT2
        need(2);
        stack.push(buf[pos]! | (buf[pos + 1]! << 8));
        pos += 2;
        break;
      case 0x4a: // BININT
        need(4);
        stack.push(dv.getInt32(pos, true));
        pos += 4;
        break;
      case 0x8a: {
        // LONG1
        need(1);
        const n = buf[pos++]!;
        need(n);
        stack.push(readLong(buf, pos, n));
        pos += n;
        break;
      }
      case 0x8b: {
        // LONG4
        need(4);
        const n = dv.getInt32(pos, true);
        pos += 4;
        if (n < 0) throw new PickleError("LONG pickle has negative byte count");
        need(n);
        stack.push(readLong(buf, pos, n));
        pos += n;
        break;
      }
      case 0x49: {
        // INT (text); "00" and "01" are protocol 0's False and True
        const t = lineText();
        stack.push(t === "00" ? false : t === "01" ? true : parseIntText(t));
        break;
      }
      case 0x4c: // LONG (text)
        stack.push(parseIntText(lineText()));
        break;
      // floats
      case 0x47: // BINFLOAT
        need(8);
        stack.push(floatValue(dv.getFloat64(pos, false)));
        pos += 8;
        break;
      case 0x46: // FLOAT (text)
        stack.push(floatValue(parseFloatText(lineText())));
        break;
      // singletons
      case 0x4e: // NONE
        stack.push(null);
        break;
      case 0x88: // NEWTRUE
        stack.push(true);
        break;
      case 0x89: // NEWFALSE
        stack.push(false);
        break;
      // str
      case 0x8c: {
        // SHORT_BINUNICODE
        need(1);
        const n = buf[pos++]!;
        need(n);
        stack.push(decodeUtf8(buf, node, pos, pos + n));
        pos += n;
        break;
      }
      case 0x58: {
        // BINUNICODE
        need(4);
        const n = dv.getUint32(pos, true);
        pos += 4;
        need(n);
        stack.push(decodeUtf8(buf, node, pos, pos + n));
        pos += n;
        break;
      }
      case 0x8d: {
        // BINUNICODE8
        need(8);
        const n = dv.getUint32(pos, true) + dv.getUint32(pos + 4, true) * TWO_32;
        pos += 8;
        need(n);
        stack.push(decodeUtf8(buf, node, pos, pos + n));
        pos += n;
        break;
      }
      case 0x56: {
        // UNICODE (text, raw-unicode-escape)
        const nl = readLine();
        stack.push(rawUnicodeEscape(buf, pos, nl));
        pos = nl + 1;
        break;
      }
      case 0x55: {
        // SHORT_BINSTRING: a Python 2 str, read as ASCII like Python 3's default
        need(1);
        const n = buf[pos++]!;
        need(n);
        stack.push(asciiStrict(buf, pos, pos + n));
        pos += n;
        break;
      }
      case 0x54: {
        // BINSTRING
        need(4);
        const n = dv.getInt32(pos, true);
        pos += 4;
        if (n < 0) throw new PickleError("BINSTRING pickle has negative byte count");
        need(n);
        stack.push(asciiStrict(buf, pos, pos + n));
        pos += n;
        break;
      }
      case 0x53: // STRING (text, quoted)
        stack.push(parseQuotedString(lineText()));
        break;
      // bytes
      case 0x43: {
        // SHORT_BINBYTES
        need(1);
        const n = buf[pos++]!;
        need(n);
        stack.push(buf.slice(pos, pos + n));
        pos += n;
        break;
      }
      case 0x42: {
        // BINBYTES
        need(4);
        const n = dv.getUint32(pos, true);
        pos += 4;
        need(n);
        stack.push(buf.slice(pos, pos + n));
        pos += n;
        break;
      }
      case 0x8e:
      case 0x96: {
        // BINBYTES8, BYTEARRAY8
        need(8);
        const n = dv.getUint32(pos, true) + dv.getUint32(pos + 4, true) * TWO_32;
        pos += 8;
        need(n);
        const b = buf.slice(pos, pos + n);
        stack.push(op === 0x96 ? asByteArray(b) : b);
        pos += n;
        break;
      }
      // containers
      case 0x5d: // EMPTY_LIST
        stack.push([]);
        containers++;
        break;
      case 0x7d: // EMPTY_DICT
        stack.push({});
        containers++;
        break;
      case 0x8f: // EMPTY_SET
        stack.push(new Set());
        containers++;
        break;
      case 0x29: // EMPTY_TUPLE
        stack.push(makeTuple([]));
        break;
      case 0x85: {
        // TUPLE1
        if (stack.length - 1 < base) throw underflow();
        const a = stack.pop();
        stack.push(makeTuple([a]));
        break;
      }
      case 0x86: {
        // TUPLE2
        if (stack.length - 2 < base) throw underflow();
        const b = stack.pop();
        const a = stack.pop();
        stack.push(makeTuple([a, b]));
        break;
      }
      case 0x87: {
        // TUPLE3
        if (stack.length - 3 < base) throw underflow();
        const c = stack.pop();
        const b = stack.pop();
        const a = stack.pop();
        stack.push(makeTuple([a, b, c]));
        break;
      }
      case 0x74: {
        // TUPLE
        const m = popMark();
        const items = stack.slice(m);
        stack.length = m;
        stack.push(makeTuple(items));
        break;
      }
      case 0x6c: {
        // LIST
        const m = popMark();
        const items = stack.slice(m);
        stack.length = m;
        stack.push(items);
        containers++;
        break;
      }
      case 0x64: {
        // DICT
        const m = popMark();
        if ((stack.length - m) % 2 !== 0) throw new PickleError("odd number of items for DICT");
        const at = m;
        const kv = stack.slice(m);
        stack.length = m;
        stack.push({});
        containers++;
        for (let i = 0; i < kv.length; i += 2) setItem(at, kv[i], kv[i + 1]);
        break;
      }
      case 0x91: {
        // FROZENSET
        const m = popMark();
        const s = new Set<unknown>();
        for (let i = m; i < stack.length; i++) s.add(stack[i]);
        stack.length = m;
        stack.push(asFrozenSet(s));
        containers++;
        break;
      }
      case 0x61: {
        // APPEND
        if (stack.length - 2 < base) throw underflow();
        const v = stack.pop();
        listAt(stack.length - 1).push(v);
        break;
      }
      case 0x65: {
        // APPENDS
        const m = popMark();
        if (m - 1 < base) throw underflow();
        const l = listAt(m - 1);
        for (let i = m; i < stack.length; i++) l.push(stack[i]);
        stack.length = m;
        break;
      }
      case 0x73: {
        // SETITEM
        if (stack.length - 3 < base) throw underflow();
        const v = stack.pop();
        const k = stack.pop();
        setItem(stack.length - 1, k, v);
        break;
      }
      case 0x75: {
        // SETITEMS
        const m = popMark();
        if (m - 1 < base) throw underflow();
        if ((stack.length - m) % 2 !== 0) throw new PickleError("odd number of items for SETITEMS");
        for (let i = m; i < stack.length; i += 2) setItem(m - 1, stack[i], stack[i + 1]);
        stack.length = m;
        break;
      }
      case 0x90: {
        // ADDITEMS
        const m = popMark();
        if (m - 1 < base) throw underflow();
        const s = stack[m - 1];
        if (!(s instanceof Set) || isFrozenSet(s))
          throw new PickleError(`ADDITEMS on a ${typeName(s)}: only a set takes items`);
        for (let i = m; i < stack.length; i++) s.add(stack[i]);
        stack.length = m;
        break;
      }
      // stack and memo
      case 0x28: // MARK
        marks.push(stack.length);
        base = stack.length;
        break;
      case 0x30: // POP: with nothing above the innermost MARK, Python drops the MARK itself
        if (stack.length === base && marks.length > 0) popMark();
        else if (pop() instanceof GlobalRef) liveGlobals--;
        break;
      case 0x31: // POP_MARK
        discard(popMark());
        break;
      case 0x32: {
        // DUP
        const v = top();
        if (v instanceof GlobalRef) liveGlobals++;
        stack.push(v);
        break;
      }
      case 0x94: // MEMOIZE
        memoPut(memoCount);
        break;
      case 0x71: // BINPUT
        need(1);
        memoPut(buf[pos++]!);
        break;
      case 0x72: // LONG_BINPUT
        need(4);
        memoPut(dv.getUint32(pos, true));
        pos += 4;
        break;
      case 0x70: // PUT (text)
        memoPut(Number(parseIntText(lineText())));
        break;
      case 0x68: // BINGET
        need(1);
        memoGet(buf[pos++]!);
        break;
      case 0x6a: // LONG_BINGET
        need(4);
        memoGet(dv.getUint32(pos, true));
        pos += 4;
        break;
      case 0x67: // GET (text)
        memoGet(Number(parseIntText(lineText())));
        break;
      // globals: only the allow-list, applied by REDUCE
      case 0x63: {
        // GLOBAL
        const module = utf8Line();
        const name = utf8Line();
        stack.push(resolveGlobal(module, name));
        liveGlobals++;
        break;
      }
      case 0x93: {
        // STACK_GLOBAL
        if (stack.length - 2 < base) throw underflow();
        const name = stack.pop();
        const module = stack.pop();
        if (typeof module !== "string" || typeof name !== "string") {
          throw new PickleError("STACK_GLOBAL requires str module and name");
        }
        stack.push(resolveGlobal(module, name));
        liveGlobals++;
        break;
      }
      case 0x52: {
        // REDUCE
        if (stack.length - 2 < base) throw underflow();
        const args = stack.pop();
        const fn = stack.pop();
        if (!(fn instanceof GlobalRef))
          throw new PickleError(`REDUCE can only apply an allow-listed global, not a ${typeName(fn)}`);
        if (!Array.isArray(args) || !isTuple(args)) throw new PickleError("REDUCE arguments must be a tuple");
        liveGlobals--;
        stack.push(applyGlobal(fn, args, budget));
        containers++;
        break;
      }
      case 0x69: // INST names its class in the stream: refuse it by name
        resolveGlobal(utf8Line(), utf8Line());
        return refuse("INST");
      case 0x81: // NEWOBJ
      case 0x92: // NEWOBJ_EX
      case 0x6f: // OBJ
      case 0x62: {
        // BUILD
        const name = { 129: "NEWOBJ", 146: "NEWOBJ_EX", 111: "OBJ", 98: "BUILD" }[op];
        const g = stack.find((v) => v instanceof GlobalRef);
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
          `invalid load key, '${op >= 0x20 && op < 0x7f ? String.fromCharCode(op) : `\\x${op.toString(16).padStart(2, "0")}`}'.`,
        );
    }
  }
}

/** Children of a decoded container (the values a walk must visit). */
function forEachChild(node: object, fn: (child: unknown) => void): void {
  if (Array.isArray(node) || node instanceof Set) for (const c of node) fn(c);
  else if (node instanceof Map)
    for (const [k, v] of node) {
      fn(k);
      fn(v);
    }
  else if (!(node instanceof Uint8Array) && !(node instanceof PyFloat))
    for (const k in node) fn((node as Record<string, unknown>)[k]);
}

/**
 * After STOP: swap dicts that became Maps wherever the old object was referenced, freeze tuples, and
 * check the nesting depth when there are enough containers to exceed it.
 */
function finish(
  root: unknown,
  tuples: unknown[][],
  replaced: Map<object, Map<unknown, unknown>> | undefined,
  depthLimit: number,
  now: () => number,
  deadline: number,
  timeoutSeconds: number,
): unknown {
  let result = root;
  if (replaced !== undefined) {
    if (typeof result === "object" && result !== null) result = replaced.get(result) ?? result;
    fixReferences(result, replaced);
  }
  for (const t of tuples) Object.freeze(t);
  if (depthLimit > 0) checkDepth(result, depthLimit, now, deadline, timeoutSeconds);
  return result;
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
      const entries = [...node].map(([k, v]) => [swap(k), swap(v)] as const);
      node.clear();
      for (const [k, v] of entries) node.set(k, v);
    } else if (node instanceof Set) {
      const items = [...node].map(swap);
      node.clear();
      for (const v of items) node.add(v);
    } else if (!(node instanceof Uint8Array) && !(node instanceof PyFloat)) {
      const rec = node as Record<string, unknown>;
      for (const k of Object.keys(rec)) {
        const v = rec[k];
        const s = swap(v);
        if (s !== v) setOwn(rec, k, s);
      }
    }
    forEachChild(node, (c) => {
      if (typeof c === "object" && c !== null && !seen.has(c)) {
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
