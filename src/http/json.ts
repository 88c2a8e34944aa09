// JSON from the network, checked before it is parsed: how deep it nests (JSON.parse has no limit, while
// JSON.stringify and every recursive walk overflow the stack) and what its values will cost on the heap.
import { FlashError } from "../flash-error.js";

/**
 * The deepest nesting of arrays and objects a JSON body may have, the body itself counting as one level.
 * Half of CPython's recursion limit (1000), so a job the platform accepts is one a runpod-python worker's
 * `json.loads` can read; V8's JSON.stringify overflows only past ~4000 (docs/protocol.md §11.1).
 */
export const MAX_JSON_DEPTH = 512;

/** What JSON.parse's values cost on V8's heap beyond their text: an object or array, and one element or key. */
const CONTAINER_BYTES = 64;
const ELEMENT_BYTES = 8;

/** A JSON text that nests deeper than the limit; refused before it is parsed. */
export class JsonTooDeepError extends FlashError {
  readonly code = "JSON_TOO_DEEP";
  override name = "JsonTooDeepError";
  constructor(
    readonly limit: number,
    /** Where the first array or object past the limit opens (a UTF-16 index into the text). */
    readonly at: number,
  ) {
    super(`JSON nests deeper than ${limit} levels, the limit (level ${limit + 1} opens at character ${at})`);
  }
}

/** One pass over a JSON text: where it first nests past the limit (-1: nowhere), and its arrays, objects and elements. */
export interface JsonShape {
  tooDeepAt: number;
  containers: number;
  elements: number;
}

const BACKSLASH = 0x5c;
/** What a character is to the scan (0: nothing), by its code below 128: one load instead of six comparisons. */
const QUOTE = 1;
const OPEN = 2;
const CLOSE = 3;
const SEPARATOR = 4;
const ROLE = new Uint8Array(128);
ROLE[0x22] = QUOTE;
ROLE[0x5b] = OPEN; // [
ROLE[0x7b] = OPEN; // {
ROLE[0x5d] = CLOSE; // ]
ROLE[0x7d] = CLOSE; // }
ROLE[0x2c] = SEPARATOR; // ,
ROLE[0x3a] = SEPARATOR; // :

/** The index of the quote that closes the string opened at `open` (the text's length when none does). */
function stringEnd(text: string, open: number): number {
  let at = open;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at < 0) return text.length;
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

/**
 * Counts `[` and `{` outside strings, without recursion and in one pass (strings are skipped with indexOf),
 * stopping at the first one past `maxDepth`. Malformed text is scanned all the same; JSON.parse refuses it.
 */
export function scanJson(text: string, maxDepth = MAX_JSON_DEPTH): JsonShape {
  let depth = 0;
  let containers = 0;
  let elements = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const role = c < 128 ? ROLE[c] : 0;
    if (role === 0) continue;
    if (role === QUOTE) i = stringEnd(text, i);
    else if (role === OPEN) {
      if (++depth > maxDepth) return { tooDeepAt: i, containers, elements };
      containers++;
    } else if (role === CLOSE) depth--;
    else elements++;
  }
  return { tooDeepAt: -1, containers, elements };
}

/** Bytes a parsed body holds, estimated from its size and shape: at least its length, more for many small values. */
export function jsonCost(bytes: number, shape: JsonShape): number {
  return bytes + shape.containers * CONTAINER_BYTES + shape.elements * ELEMENT_BYTES;
}

/** JSON.parse after the depth check: a JsonTooDeepError before anything is built, a SyntaxError for malformed text. */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const { tooDeepAt } = scanJson(text, maxDepth);
  if (tooDeepAt >= 0) throw new JsonTooDeepError(maxDepth, tooDeepAt);
  return JSON.parse(text);
}
