// Base64 + pickle for one argument or result, with docs/toolkit.md §3's limits and exact messages.

import { Buffer } from "node:buffer";
import { isFlashError, PayloadTooLargeError } from "../flash-error.js";
import { type DecodeOptions, decode } from "./decode.js";
import { type EncodeOptions, encode } from "./encode.js";
import { SerializationError } from "./errors.js";
import { MAX_PAYLOAD_BASE64_CHARS } from "./limits.js";
import { setOwn } from "./values.js";

const NOT_ALPHABET = /[^A-Za-z0-9+/=]/g;

/** Base64 text → bytes as Python's `base64.b64decode` (non-validating) reads it: stray characters dropped, padding checked. */
export function b64decode(text: string): Uint8Array {
  return ownBytes(strictB64decode(text) ?? lenientB64decode(text));
}

/**
 * The common case, canonical base64, without the scan for stray characters (a regex over every character: three
 * quarters of a 10 MB argument's decode). Null where the text has anything else, for the lenient reading.
 */
export function strictB64decode(text: string): Buffer | null {
  const n = text.length;
  // Node reads "-" and "_" as base64url, and a char past ASCII as some byte: either would pass the length check
  if (n % 4 !== 0 || text.includes("-") || text.includes("_") || Buffer.byteLength(text, "utf8") !== n)
    return null;
  const eq = text.indexOf("=");
  const pads = eq < 0 ? 0 : n - eq;
  if (pads > 2 || (pads === 2 && text[n - 1] !== "=")) return null;
  const bytes = Buffer.from(text, "base64");
  // Node skips any other character, which leaves fewer bytes than four characters of the alphabet make
  return bytes.byteLength === (n / 4) * 3 - pads ? bytes : null;
}

/** Python's reading of any text: characters outside the alphabet dropped, then the padding checked. */
export function lenientB64decode(text: string): Buffer {
  const clean = text.replace(NOT_ALPHABET, "");
  const eq = clean.indexOf("=");
  const data = eq < 0 ? clean : clean.slice(0, eq);
  if (data.length % 4 === 1) {
    throw new SerializationError(
      `Invalid base64-encoded string: number of data characters (${data.length}) cannot be 1 more than a multiple of 4`,
    );
  }
  const padded = data.length % 4 === 0 ? 0 : 4 - (data.length % 4);
  if (clean.length - data.length < padded) throw new SerializationError("Incorrect padding");
  return Buffer.from(data, "base64");
}

/** A large Buffer owns its memory and is handed out as it is; a small one sits in Node's shared pool: copied out. */
function ownBytes(bytes: Buffer): Uint8Array {
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  return own ? new Uint8Array(bytes.buffer, 0, bytes.byteLength) : new Uint8Array(bytes);
}

const reason = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/** Limit errors pass through unchanged (docs/toolkit.md §3.2); everything else gets the caller's prefix. */
function wrap(prefix: string, e: unknown): Error {
  if (isFlashError(e, "PAYLOAD_TOO_LARGE", "DESERIALIZE_TIMEOUT")) return e;
  const inner =
    isFlashError(e, "SERIALIZATION_FAILED") && e.cause !== undefined ? reason(e.cause) : reason(e);
  return new SerializationError(`${prefix}: ${inner}`, { cause: e });
}

/** One base64 pickle → JS value. Throws PayloadTooLargeError, DeserializeTimeoutError or SerializationError. */
export function deserializeArg(b64: unknown, options?: DecodeOptions): unknown {
  try {
    if (typeof b64 !== "string")
      throw new SerializationError(`expected a base64 string, got ${b64 === null ? "null" : typeof b64}`);
    if (b64.length > MAX_PAYLOAD_BASE64_CHARS)
      throw new PayloadTooLargeError(b64.length, MAX_PAYLOAD_BASE64_CHARS);
    return decode(b64decode(b64), options);
  } catch (e) {
    throw wrap("Failed to deserialize argument", e);
  }
}

/** The `args` list of a FunctionRequest, each item checked and decoded on its own. */
export function deserializeArgs(list: unknown, options?: DecodeOptions): unknown[] {
  try {
    if (!Array.isArray(list)) throw new SerializationError("args must be a list of base64 strings");
    return list.map((a) => deserializeArg(a, options));
  } catch (e) {
    throw wrap("Failed to deserialize args", e);
  }
}

/** The `kwargs` object of a FunctionRequest; keys become own properties, never prototype setters. */
export function deserializeKwargs(obj: unknown, options?: DecodeOptions): Record<string, unknown> {
  try {
    if (typeof obj !== "object" || obj === null || Array.isArray(obj))
      throw new SerializationError("kwargs must be an object");
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) {
      setOwn(out, k, deserializeArg(v, options));
    }
    return out;
  } catch (e) {
    throw wrap("Failed to deserialize kwargs", e);
  }
}

/** Base64 of the encoder's bytes, read in place (Buffer.from of a Uint8Array would copy them first). */
function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/** JS value → base64 pickle (protocol 5 unless asked), what the client's args carry. */
export function serializeArg(value: unknown, options?: EncodeOptions): string {
  try {
    return base64(encode(value, options));
  } catch (e) {
    throw wrap("Failed to serialize argument", e);
  }
}

/** A function's return value → base64 pickle for `result`; failures say "Failed to serialize result" (docs/toolkit.md §2). */
export function serializeResult(value: unknown, options?: EncodeOptions): string {
  try {
    return base64(encode(value, options));
  } catch (e) {
    throw wrap("Failed to serialize result", e);
  }
}
