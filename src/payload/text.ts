// Decoders for protocol-0 text arguments (INT, LONG, FLOAT, STRING, UNICODE lines) and a strict UTF-8 encoder.
import { Buffer } from "node:buffer";
import { PickleError } from "./errors.js";
import { MAX_STR_DIGITS } from "./limits.js";

/** Python's whitespace in C strings (Py_ISSPACE). */
const SPACE = " \t\n\r\v\f";
const isSpace = (c: string | undefined): boolean => c !== undefined && c !== "" && SPACE.includes(c);
/** Python's int() digit grammar after the sign, by base: digits with single underscores between them. */
const DIGITS: Record<number, RegExp> = {
  2: /^_?[01](?:_?[01])*/,
  8: /^_?[0-7](?:_?[0-7])*/,
  10: /^[0-9](?:_?[0-9])*/,
  16: /^_?[0-9a-fA-F](?:_?[0-9a-fA-F])*/,
};
const PREFIX: Record<string, number> = { x: 16, o: 8, b: 2 };

/**
 * A protocol-0 text argument as CPython's C unpickler sees it: a C string, so it ends at the first NUL, and
 * otherwise keeps the line's newline. Bytes are read as latin-1 (any non-ASCII byte then fails to parse).
 */
export function cLine(buf: Uint8Array, start: number, nl: number, dropTrailingL = false): string {
  let end = nl;
  // LONG writes a trailing "L" that the unpickler overwrites with a NUL
  const cut = dropTrailingL && nl > start && buf[nl - 1] === 0x4c;
  if (cut) end = nl - 1;
  const nul = buf.subarray(start, end).indexOf(0);
  if (nul >= 0) return latin1(buf, start, start + nul);
  return latin1(buf, start, end) + (cut ? "" : "\n");
}

function latin1(buf: Uint8Array, start: number, end: number): string {
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString("latin1");
}

/** Python's repr of an ASCII-ish str, for error messages that quote the input as CPython does. */
function pyRepr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = "";
  for (const c of s) {
    const n = c.charCodeAt(0);
    if (c === "\\" || c === q) out += `\\${c}`;
    else if (c === "\n") out += "\\n";
    else if (c === "\r") out += "\\r";
    else if (c === "\t") out += "\\t";
    else if (n < 0x20 || (n >= 0x7f && n < 0xa0)) out += `\\x${n.toString(16).padStart(2, "0")}`;
    else out += c;
  }
  return q + out + q;
}

/**
 * int(text, base) for base 0 (a prefix picks 16, 8 or 2; otherwise decimal without leading zeros) or 10, as
 * PyLong_FromString reads a C string: surrounding whitespace, one sign, underscores between digits.
 */
export function pyInt(text: string, base: 0 | 10): bigint {
  let i = 0;
  while (isSpace(text[i])) i++;
  let negative = false;
  if (text[i] === "+" || text[i] === "-") negative = text[i++] === "-";
  let radix = 10;
  let zeroOnly = false;
  if (base === 0) {
    const p = text[i] === "0" ? PREFIX[(text[i + 1] ?? "").toLowerCase()] : undefined;
    if (p !== undefined) {
      radix = p;
      i += 2;
    } else zeroOnly = text[i] === "0";
  }
  const fail = (shownBase: number): PickleError =>
    new PickleError(`invalid literal for int() with base ${shownBase}: ${pyRepr(text.slice(0, 200))}`);
  const m = DIGITS[radix]!.exec(text.slice(i));
  if (m === null) throw fail(base === 0 && zeroOnly ? 0 : radix);
  i += m[0].length;
  while (isSpace(text[i])) i++;
  if (i < text.length) throw fail(zeroOnly ? 0 : radix);
  const digits = m[0].replaceAll("_", "");
  if (radix === 10 && digits.length > MAX_STR_DIGITS) {
    throw new PickleError(
      `Exceeds the limit (${MAX_STR_DIGITS} digits) for integer string conversion: value has ${digits.length} digits; use sys.set_int_max_str_digits() to increase the limit`,
    );
  }
  const v = BigInt(radix === 10 ? digits : `0${radix === 16 ? "x" : radix === 8 ? "o" : "b"}${digits}`);
  if (zeroOnly && v !== 0n) throw fail(0);
  return negative ? -v : v;
}

/**
 * C's strtol(text, &end, 0), which CPython's INT opcode tries first: the value when it reads up to the line's
 * end within a C long, else undefined (the opcode then falls back to int()). Base 0 here is C's: 0x is hex and
 * a leading 0 is octal.
 */
function strtol(text: string): bigint | undefined {
  let i = 0;
  while (isSpace(text[i])) i++;
  let negative = false;
  if (text[i] === "+" || text[i] === "-") negative = text[i++] === "-";
  let radix = 10;
  const hex =
    text[i] === "0" && (text[i + 1] === "x" || text[i + 1] === "X") && HEX_DIGIT.test(text[i + 2] ?? "");
  if (hex) {
    radix = 16;
    i += 2;
  } else if (text[i] === "0") radix = 8;
  const from = i;
  const run = DIGIT_RUN[radix]!;
  run.lastIndex = i;
  run.exec(text);
  i = run.lastIndex;
  // no digits: C leaves the end at the very start, which only an empty string accepts
  if (i === from) return text === "" ? 0n : undefined;
  if (i < text.length && text.slice(i) !== "\n") return undefined;
  const digits = text.slice(from, i).replace(LEADING_ZEROS, "");
  // too many digits for a C long: int() reads it, and nothing parses a long run of digits twice
  if (digits.length > LONG_DIGITS[radix]!) return undefined;
  const v = BigInt(radix === 16 ? `0x${digits}` : radix === 8 ? `0o${digits}` : digits);
  const signed = negative ? -v : v;
  return signed > 9223372036854775807n || signed < -9223372036854775808n ? undefined : signed;
}

const HEX_DIGIT = /^[0-9a-fA-F]$/;
/** strtol's digits in each base it reads, from lastIndex on. */
const DIGIT_RUN: Record<number, RegExp> = { 8: /[0-7]*/y, 10: /[0-9]*/y, 16: /[0-9a-fA-F]*/y };
const LEADING_ZEROS = /^0+(?=.)/;
/** The most digits of a C long's magnitude in each base. */
const LONG_DIGITS: Record<number, number> = { 8: 22, 10: 19, 16: 16 };

/** INT's argument (a cLine of `contentBytes` bytes before its newline): two bytes reading 0 or 1 are protocol 0's bools. */
export function parseIntText(text: string, contentBytes: number): number | bigint | boolean {
  const x = strtol(text);
  if (x !== undefined) return contentBytes === 2 && (x === 0n || x === 1n) ? x === 1n : normalizeInt(x);
  try {
    return normalizeInt(pyInt(text, 0));
  } catch {
    // CPython's load_int replaces every int() failure with this, its digit limit's too
    throw new PickleError("could not convert string to int");
  }
}

/** LONG's argument (a cLine with its "L" dropped). */
export function parseLongText(text: string): number | bigint {
  return normalizeInt(pyInt(text, 0));
}

/** Safe integers become numbers, the rest stay bigint (the int mapping of index.ts). */
export function normalizeInt(v: bigint): number | bigint {
  return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v;
}

const INF_NAN = /^[+-]?(?:infinity|inf|nan)/i;
const DECIMAL = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/;

/** FLOAT's argument (a cLine) as CPython's PyOS_string_to_double reads it, with its errors. */
export function parseFloatText(text: string): number {
  const m = INF_NAN.exec(text) ?? DECIMAL.exec(text);
  if (m === null) throw new PickleError(`could not convert string to float: '${text.slice(0, 200)}'`);
  const rest = text.slice(m[0].length);
  if (rest !== "" && rest !== "\n") throw new PickleError("could not convert string to float");
  const t = m[0].toLowerCase().replace("infinity", "inf");
  if (t.endsWith("nan")) return Number.NaN;
  if (t.endsWith("inf")) return t.startsWith("-") ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  const v = Number(t);
  if (!Number.isFinite(v))
    throw new PickleError(`value too large to convert to float: '${text.slice(0, 200)}'`);
  return v;
}

/** Bytes decoded as ASCII, as Python 3 reads Python 2 `str` pickles by default (encoding="ASCII"). */
export function asciiStrict(buf: Uint8Array, start: number, end: number): string {
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c >= 0x80) {
      throw new PickleError(
        `'ascii' codec can't decode byte 0x${c.toString(16)} in position ${i - start}: ordinal not in range(128)`,
      );
    }
  }
  // one native copy: a str built a character at a time held a rope node per byte (~32 bytes each)
  return latin1(buf, start, end);
}

/** Python's one-character string escapes (octal ones, \0 included, are read apart). */
const ESCAPES = new Map<string, string>([
  ["n", "\n"],
  ["t", "\t"],
  ["r", "\r"],
  ["\\", "\\"],
  ["'", "'"],
  ['"', '"'],
  ["a", "\x07"],
  ["b", "\b"],
  ["f", "\f"],
  ["v", "\v"],
]);
const OCTAL = /^[0-7]{1,3}/;

/** The escape at body[at] (a backslash): what it stands for and where the text after it starts. */
function readEscape(body: string, at: number): [string, number] {
  const e = body[at + 1];
  if (e === undefined) throw new PickleError("Trailing \\ in string");
  if (e === "x") {
    const hex = body.slice(at + 2, at + 4);
    if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new PickleError(`invalid \\x escape at position ${at}`);
    return [String.fromCharCode(Number.parseInt(hex, 16)), at + 4];
  }
  const octal = OCTAL.exec(body.slice(at + 1, at + 4));
  if (octal !== null)
    return [String.fromCharCode(Number.parseInt(octal[0], 8) & 0xff), at + 1 + octal[0].length];
  return [ESCAPES.get(e) ?? `\\${e}`, at + 2];
}

/** The quoted Python 2 string literal of a STRING line ('abc' or "a\x00"), escapes resolved, read as ASCII. */
export function parseQuotedString(line: string): string {
  const q = line[0];
  if (line.length < 2 || (q !== "'" && q !== '"') || line[line.length - 1] !== q) {
    throw new PickleError("the STRING opcode argument must be quoted");
  }
  const body = line.slice(1, -1);
  // runs between escapes are copied whole: a character at a time made a rope node per byte
  let out = "";
  let from = 0;
  for (let at = body.indexOf("\\"); at >= 0; at = body.indexOf("\\", from)) {
    const [text, next] = readEscape(body, at);
    out += body.slice(from, at) + text;
    from = next;
  }
  out += body.slice(from);
  const high = out.search(/[\u0080-\uffff]/);
  if (high >= 0) {
    throw new PickleError(
      `'ascii' codec can't decode byte 0x${out.charCodeAt(high).toString(16)} in position ${high}: ordinal not in range(128)`,
    );
  }
  return out;
}

/** Python's raw-unicode-escape: latin-1 bytes where \uXXXX and \UXXXXXXXX stand for code points. */
export function rawUnicodeEscape(buf: Uint8Array, start: number, end: number): string {
  let out = "";
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    const n = buf[i + 1];
    if (c === 0x5c && i + 1 < end && (n === 0x75 || n === 0x55)) {
      const width = n === 0x75 ? 4 : 8;
      let hex = "";
      for (let k = 0; k < width; k++) hex += String.fromCharCode(buf[i + 2 + k] ?? 0);
      if (i + 2 + width > end || !/^[0-9a-fA-F]+$/.test(hex)) {
        throw new PickleError("'rawunicodeescape' codec can't decode bytes: truncated \\uXXXX escape");
      }
      const cp = Number.parseInt(hex, 16);
      if (cp > 0x10ffff)
        throw new PickleError("'rawunicodeescape' codec can't decode bytes: \\Uxxxxxxxx out of range");
      out += String.fromCodePoint(cp);
      i += 1 + width;
    } else if (c === 0x5c && i + 1 < end) {
      // a backslash and the character after it are taken as a pair: "\\\\u0041" is no escape
      out += String.fromCharCode(c, n!);
      i++;
    } else {
      out += String.fromCharCode(c);
    }
  }
  return out;
}

/** Strict UTF-8 (no lone surrogates), as `str.encode("utf-8")` does. */
export function utf8Strict(s: string): Uint8Array {
  if (!(s as unknown as { isWellFormed(): boolean }).isWellFormed()) {
    throw new PickleError("'utf-8' codec can't encode a lone surrogate: surrogates not allowed");
  }
  return new Uint8Array(Buffer.from(s, "utf8"));
}
