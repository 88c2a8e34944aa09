// Decoders for protocol-0 text arguments (INT, LONG, FLOAT, STRING, UNICODE lines) and a strict UTF-8 encoder.
import { Buffer } from "node:buffer";
import { PickleError } from "./errors.js";

const INT_RE = /^[+-]?[0-9]+$/;
const FLOAT_RE = /^[+-]?(?:[0-9]+\.?[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)$/;

/** A decimal int as Python writes it after INT / LONG (LONG may end in "L"). */
export function parseIntText(text: string): number | bigint {
  const t = text.endsWith("L") ? text.slice(0, -1) : text;
  if (!INT_RE.test(t)) throw new PickleError(`invalid literal for int() with base 10: '${text}'`);
  return normalizeInt(BigInt(t));
}

/** Safe integers become numbers, the rest stay bigint (the int mapping of index.ts). */
export function normalizeInt(v: bigint): number | bigint {
  return v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v;
}

/** A float repr as protocol 0 writes it ("1.5", "inf", "nan", "1e+300"). */
export function parseFloatText(text: string): number {
  const t = text.trim().toLowerCase();
  if (t === "nan" || t === "+nan" || t === "-nan") return Number.NaN;
  if (t === "inf" || t === "+inf" || t === "infinity") return Number.POSITIVE_INFINITY;
  if (t === "-inf" || t === "-infinity") return Number.NEGATIVE_INFINITY;
  if (!FLOAT_RE.test(t)) throw new PickleError(`could not convert string to float: '${text}'`);
  return Number(t);
}

/** Bytes decoded as ASCII, as Python 3 reads Python 2 `str` pickles by default (encoding="ASCII"). */
export function asciiStrict(buf: Uint8Array, start: number, end: number): string {
  let s = "";
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    if (c >= 0x80) {
      throw new PickleError(
        `'ascii' codec can't decode byte 0x${c.toString(16)} in position ${i - start}: ordinal not in range(128)`,
      );
    }
    s += String.fromCharCode(c);
  }
  return s;
}

/** The quoted Python 2 string literal of a STRING line ('abc' or "a\x00"), escapes resolved, read as ASCII. */
export function parseQuotedString(line: string): string {
  const q = line[0];
  if (line.length < 2 || (q !== "'" && q !== '"') || line[line.length - 1] !== q) {
    throw new PickleError("the STRING opcode argument must be quoted");
  }
  const body = line.slice(1, -1);
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      out += c;
      continue;
    }
    const e = body[++i];
    const simple: Record<string, string> = {
      n: "\n",
      t: "\t",
      r: "\r",
      "\\": "\\",
      "'": "'",
      '"': '"',
      a: "\x07",
      b: "\b",
      f: "\f",
      v: "\v",
      "0": "\0",
    };
    if (e === "x") {
      const hex = body.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new PickleError("invalid \\x escape in STRING");
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += 2;
    } else if (e !== undefined && /[0-7]/.test(e)) {
      let j = i;
      while (j < i + 3 && j < body.length && /[0-7]/.test(body[j]!)) j++;
      out += String.fromCharCode(Number.parseInt(body.slice(i, j), 8) & 0xff);
      i = j - 1;
    } else if (e !== undefined && Object.hasOwn(simple, e)) {
      out += simple[e];
    } else {
      out += `\\${e ?? ""}`;
    }
  }
  for (let i = 0; i < out.length; i++) {
    if (out.charCodeAt(i) >= 0x80) {
      throw new PickleError(
        `'ascii' codec can't decode byte 0x${out.charCodeAt(i).toString(16)} in position ${i}: ordinal not in range(128)`,
      );
    }
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
