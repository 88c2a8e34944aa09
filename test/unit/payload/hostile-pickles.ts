// Generated hostile pickles of any size, each the worst of its kind found for the decoder's memory or time per
// input byte: the hostile-input suite (hostile-limits.test.ts) and `npm run bench hostile` both use them.
import { Buffer } from "node:buffer";

type Bytes = Uint8Array | readonly number[] | string;

/** The parts one after another; strings are latin-1 text. */
function cat(...parts: Bytes[]): Uint8Array {
  return concat(parts);
}

function concat(parts: readonly Bytes[]): Uint8Array {
  return Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))));
}

/** `unit` n times. */
function times(unit: Bytes, n: number): Uint8Array {
  const u = typeof unit === "string" ? Buffer.from(unit, "latin1") : Buffer.from(unit);
  return n <= 0 ? new Uint8Array(0) : Buffer.alloc(u.length * n, u);
}

/** n units made by `unit(i)`, as one buffer (joined a few thousand at a time, so making it takes little memory). */
function each(n: number, unit: (i: number) => Bytes): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (let from = 0; from < n; from += 4096) {
    const parts: Bytes[] = [];
    for (let i = from; i < Math.min(n, from + 4096); i++) parts.push(unit(i));
    blocks.push(concat(parts));
  }
  return concat(blocks);
}

const u16 = (n: number): number[] => [n & 0xff, (n >>> 8) & 0xff];
const u32 = (n: number): number[] => [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
/** SHORT_BINUNICODE of ASCII text. */
const sbu = (s: string): Bytes => cat([0x8c, s.length], s);
/** `(` units `l.`: a list of n items made by one opcode run each, at protocol 4. */
const listOf = (unit: Bytes, size: number): Uint8Array => {
  return cat([0x80, 4, 0x28], times(unit, Math.floor((size - 5) / unit.length)), "l.");
};
/** The allow-listed global builtins.<name> as memo 0, and what follows it. */
const globalThen = (name: string, ...rest: Bytes[]): Uint8Array =>
  cat([0x80, 4], sbu("builtins"), sbu(name), [0x93, 0x94], ...rest);

/** What decoding one must end in: a value, or a refusal whose message matches. */
export type Expected = { value: true } | { error: RegExp };

export interface Hostile {
  /** What it is, in a few words. */
  what: string;
  /** A pickle of about `size` bytes. */
  make: (size: number) => Uint8Array;
  expect: Expected;
}

const value = { value: true } as const;
const refused = (error: RegExp): Expected => ({ error });

/** Every hostile pickle, by name. */
export const HOSTILE: Record<string, Hostile> = {
  "sparse-memo": {
    what: "LONG_BINPUT at indices 4,096 apart (issue 43, case 1)",
    make: (size) =>
      cat(
        [0x80, 5, 0x4e],
        each(Math.floor((size - 4) / 5), (i) => [0x72, ...u32(i * 4096)]),
        ".",
      ),
    expect: value,
  },
  "far-memo": {
    what: "LONG_BINPUT downwards from index 2^32 - 1, then a LONG_BINGET of the first",
    make: (size) =>
      cat(
        [0x80, 5, 0x4e],
        each(Math.floor((size - 9) / 5), (i) => [0x72, ...u32(0xffffffff - i * 4097)]),
        [0x6a, ...u32(0xffffffff)],
        ".",
      ),
    expect: value,
  },
  "text-memo": {
    what: "protocol-0 PUT lines at scattered nine-digit indices",
    make: (size) =>
      cat(
        "N",
        each(Math.floor((size - 2) / 11), (i) => `p${4e8 + i * 7919}\n`),
        ".",
      ),
    expect: value,
  },
  "dense-memo": {
    what: "one MEMOIZE per byte of one value",
    make: (size) => cat([0x80, 4, 0x4e], times([0x94], size - 4), "."),
    expect: value,
  },
  "dense-str-memo": {
    what: "one MEMOIZE per byte of one str (kept by range)",
    make: (size) => cat([0x80, 4, 0x8c, 0], times([0x94], size - 5), "."),
    expect: value,
  },
  "memo-gets": {
    what: "a list appended to itself by BINGET, once per two bytes",
    make: (size) => cat([0x80, 4, 0x5d, 0x94, 0x28], times([0x68, 0], Math.floor((size - 7) / 2)), "e."),
    expect: value,
  },
  "empty-sets": { what: "a list of EMPTY_SETs", make: (size) => listOf([0x8f], size), expect: value },
  "empty-sets-walked": {
    what: "a list of EMPTY_SETs after a dict with an int key, so the result is walked once more at STOP",
    make: (size) => cat([0x80, 4, 0x28, 0x7d, 0x4b, 1, 0x4e, 0x73], times([0x8f], size - 11), "l."),
    expect: value,
  },
  "empty-bytes": {
    what: "a list of empty SHORT_BINBYTES",
    make: (size) => listOf([0x43, 0], size),
    expect: value,
  },
  "empty-frozensets": {
    what: "a list of empty FROZENSETs",
    make: (size) => listOf([0x28, 0x91], size),
    expect: value,
  },
  "empty-tuples": { what: "a list of EMPTY_TUPLEs", make: (size) => listOf([0x29], size), expect: value },
  "one-tuples": {
    what: "a list of TUPLE1s of None (a tag per tuple)",
    make: (size) => listOf([0x4e, 0x85], size),
    expect: value,
  },
  "nested-lists": {
    what: "a list of lists each holding an empty list (a depth per list)",
    make: (size) => listOf([0x5d, 0x5d, 0x61], size),
    expect: value,
  },
  "dup-lists": {
    what: "a list of EMPTY_LISTs, each pushed again by DUP",
    make: (size) => listOf([0x5d, 0x32], size),
    expect: value,
  },
  "empty-dicts": { what: "a list of EMPTY_DICTs", make: (size) => listOf([0x7d], size), expect: value },
  "empty-lists": { what: "a list of EMPTY_LISTs", make: (size) => listOf([0x5d], size), expect: value },
  "set-copies": {
    what: "set() of one memoized list of 16,384 ints, again and again",
    make: (size) => {
      const list = cat(
        [0x5d, 0x28],
        each(16_384, (i) => [0x4d, ...u16(i)]),
        [0x65, 0x94, 0x30],
      );
      const copy = [0x68, 0, 0x68, 1, 0x85, 0x52];
      return globalThen(
        "set",
        list,
        [0x5d, 0x28],
        times(copy, Math.floor((size - list.length - 20) / 6)),
        "e.",
      );
    },
    expect: refused(/^pickle expands beyond \d+ copied items$/),
  },
  "bytes-copies": {
    what: "bytearray() of one memoized 32 KiB bytes, again and again",
    make: (size) => {
      const bytes = cat([0x42, ...u32(32_768)], times([0x61], 32_768), [0x94, 0x30]);
      const copy = [0x68, 0, 0x68, 1, 0x85, 0x52];
      return globalThen(
        "bytearray",
        bytes,
        [0x5d, 0x28],
        times(copy, Math.floor((size - bytes.length - 26) / 6)),
        "e.",
      );
    },
    expect: refused(/^pickle expands beyond \d+ copied items$/),
  },
  "deep-lists": {
    what: "EMPTY_LISTs appended into each other",
    make: (size) => cat([0x80, 4], times([0x5d], size >> 1), times([0x61], (size >> 1) - 4), "."),
    expect: refused(/^pickle nests deeper than 2000 levels$/),
  },
  "deep-tuples": {
    what: "a TUPLE1 chain",
    make: (size) => cat([0x80, 4, 0x4e], times([0x85], size - 4), "."),
    expect: refused(/^pickle nests deeper than 2000 levels$/),
  },
  "deep-dicts": {
    what: "dicts set into each other by SETITEM",
    make: (size) => {
      const n = Math.floor((size - 4) / 5);
      return cat([0x80, 4, 0x7d], times([0x8c, 1, 0x6b, 0x7d], n), times([0x73], n), ".");
    },
    expect: refused(/^pickle nests deeper than 2000 levels$/),
  },
  marks: {
    what: "one MARK per byte",
    make: (size) => cat([0x80, 4], times([0x28], size - 4), "N."),
    expect: value,
  },
  "huge-str-length": {
    what: "BINUNICODE8 claiming 2^62 bytes",
    make: (size) => cat([0x80, 5, 0x8d], [0, 0, 0, 0, 0, 0, 0, 0x40], times("a", size - 11)),
    expect: refused(/^pickle data was truncated$/),
  },
  "huge-bytes-length": {
    what: "BYTEARRAY8 claiming 2^53 bytes",
    make: (size) => cat([0x80, 5, 0x96], [0, 0, 0, 0, 0, 0, 0x20, 0], times("a", size - 11)),
    expect: refused(/^pickle data was truncated$/),
  },
  "huge-long-length": {
    what: "LONG4 claiming 2^31 - 1 bytes",
    make: (size) => cat([0x80, 5, 0x8b], u32(0x7fffffff), times("a", size - 7)),
    expect: refused(/^pickle data was truncated$/),
  },
  "big-long4": {
    what: "one LONG4 int filling the pickle",
    make: (size) => cat([0x80, 5, 0x8b], u32(size - 8), times([0xab], size - 8), "."),
    expect: value,
  },
  "big-hex-long": {
    what: "one protocol-0 LONG line of hex digits",
    make: (size) => cat("L0x", times("f", size - 6), "L\n."),
    expect: value,
  },
  "decimal-longs": {
    what: "protocol-0 LONG lines of 4,300 digits, CPython's most",
    make: (size) => cat(times(cat("L", times("9", 4300), "L\n0"), Math.floor((size - 2) / 4304)), "N."),
    expect: value,
  },
  "decimal-long-over": {
    what: "one protocol-0 LONG line of decimal digits, over CPython's 4,300",
    make: (size) => cat("L", times("9", size - 4), "\n."),
    expect: refused(/^Exceeds the limit \(4300 digits\) for integer string conversion: value has \d+ digits/),
  },
  "decimal-int-over": {
    what: "one protocol-0 INT line of decimal digits, over CPython's 4,300",
    make: (size) => cat("I", times("9", size - 4), "\n."),
    expect: refused(/^could not convert string to int$/),
  },
  binstring: {
    what: "one BINSTRING (a Python 2 str, read as ASCII)",
    make: (size) => cat([0x80, 2, 0x54], u32(size - 8), times("a", size - 8), "."),
    expect: value,
  },
  "string-line": {
    what: "one protocol-0 STRING line",
    make: (size) => cat("S'", times("a", size - 5), "'\n."),
    expect: value,
  },
  "unicode-line": {
    what: "one protocol-0 UNICODE line of \\u escapes",
    make: (size) => cat("V", times("\\u0041", Math.floor((size - 3) / 6)), "\n."),
    expect: value,
  },
  "float-line": {
    what: "one protocol-0 FLOAT line of digits",
    make: (size) => cat("F0.", times("1", size - 6), "\n."),
    expect: value,
  },
  "global-name": {
    what: "a GLOBAL whose module name fills the pickle",
    make: (size) => cat("c", times("a", size - 5), "\nb\n."),
    expect: refused(/^refusing global 'a{10,}…': /),
  },
  "dict-int-keys": {
    what: "one dict of BININT keys (a Map)",
    make: (size) =>
      cat(
        [0x80, 4, 0x7d, 0x28],
        each(Math.floor((size - 6) / 6), (i) => [0x4a, ...u32(i), 0x4e]),
        "u.",
      ),
    expect: value,
  },
  "dict-str-keys": {
    what: "one dict of distinct six-letter str keys",
    make: (size) =>
      cat(
        [0x80, 4, 0x7d, 0x28],
        each(Math.floor((size - 6) / 9), (i) => cat(sbu(i.toString(36).padStart(6, "0")), [0x4e])),
        "u.",
      ),
    expect: value,
  },
};
