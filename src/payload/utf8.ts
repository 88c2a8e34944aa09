// UTF-8 with Python's "surrogatepass": pickle writes lone surrogates as 3-byte sequences (ED A0..BF xx),
// which TextDecoder and Buffer would turn into U+FFFD.
import { Buffer, isAscii, isUtf8 } from "node:buffer";
import { oneByteString } from "./buffer-internals.js";
import { PickleError } from "./errors.js";

const CHUNK = 4096;

/** Decodes bytes [start, end) of `buf` as UTF-8, accepting encoded lone surrogates as Python does. */
export function decodeUtf8(buf: Uint8Array, node: Buffer, start: number, end: number): string {
  const len = end - start;
  if (len <= 64) {
    // short strings dominate records: scan for ASCII, then one native copy (concatenation would make garbage)
    for (let i = start; i < end; i++) if (buf[i]! >= 0x80) return decodeSlow(buf, start, end);
    if (len <= 4) {
      let s = "";
      for (let i = start; i < end; i++) s += String.fromCharCode(buf[i]!);
      return s;
    }
    return oneByteString(node, start, end);
  }
  const view = buf.subarray(start, end);
  if (isAscii(view)) return oneByteString(node, start, end);
  if (isUtf8(view)) return node.toString("utf8", start, end);
  return decodeSlow(buf, start, end);
}

function fail(buf: Uint8Array, start: number, i: number, why: string): never {
  const b = buf[i]!.toString(16).padStart(2, "0");
  throw new PickleError(`'utf-8' codec can't decode byte 0x${b} in position ${i - start}: ${why}`);
}

/** A strict UTF-8 decoder that also accepts surrogates (U+D800..U+DFFF) encoded as three bytes. */
function decodeSlow(buf: Uint8Array, start: number, end: number): string {
  const units: number[] = [];
  let out = "";
  let i = start;
  while (i < end) {
    const c = buf[i]!;
    if (c < 0x80) {
      units.push(c);
      i++;
    } else {
      let cp: number;
      let need: number;
      let min: number;
      if (c >= 0xc2 && c <= 0xdf) {
        cp = c & 0x1f;
        need = 1;
        min = 0x80;
      } else if (c >= 0xe0 && c <= 0xef) {
        cp = c & 0x0f;
        need = 2;
        min = 0x800;
      } else if (c >= 0xf0 && c <= 0xf4) {
        cp = c & 0x07;
        need = 3;
        min = 0x10000;
      } else {
        fail(buf, start, i, "invalid start byte");
      }
      if (i + need >= end) fail(buf, start, i, "unexpected end of data");
      for (let k = 1; k <= need; k++) {
        const cc = buf[i + k]!;
        if ((cc & 0xc0) !== 0x80) fail(buf, start, i, "invalid continuation byte");
        cp = (cp << 6) | (cc & 0x3f);
      }
      if (cp < min || cp > 0x10ffff) fail(buf, start, i, "invalid continuation byte");
      i += need + 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        units.push(0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
      } else {
        units.push(cp);
      }
    }
    if (units.length >= CHUNK) {
      out += String.fromCharCode(...units);
      units.length = 0;
    }
  }
  return out + String.fromCharCode(...units);
}

/** Encodes a string as UTF-8; lone surrogates become 3-byte sequences (Python's surrogatepass). */
export function encodeUtf8(s: string): Uint8Array {
  if ((s as unknown as { isWellFormed(): boolean }).isWellFormed()) return Buffer.from(s, "utf8");
  const out = new Uint8Array(s.length * 3);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) out[n++] = c;
    else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 0x3f);
    } else if (c < 0x10000) {
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    } else {
      out[n++] = 0xf0 | (c >> 18);
      out[n++] = 0x80 | ((c >> 12) & 0x3f);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
  }
  return out.subarray(0, n);
}
