// Buffer's undocumented native string methods, the ones `toString("latin1", …)` and `write(s, at, n)` end in,
// called without the documented calls' argument parsing and encoding dispatch. What they buy, measured A/B
// (test/bench/payload-ab.ts, Node 20): decoding small records takes 0.84× the time of the documented calls,
// encoding 0.95× (docs/benchmarks-history.md, "Oddities, measured"). Used nowhere else
// (test/unit/layout/oddities.test.ts); on a runtime without them, the documented calls stand in.
import { Buffer } from "node:buffer";

export interface Internals {
  latin1Slice?(start: number, end: number): string;
  utf8Write?(s: string, offset: number, length: number): number;
}

export interface StringMethods {
  /** Bytes [start, end) of `buf` as a one-byte string: `buf.toString("latin1", start, end)`. */
  oneByteString(buf: Buffer, start: number, end: number): string;
  /** Writes `s` as UTF-8 into `buf` at `offset`, at most `length` bytes; the count: `buf.write(s, offset, length)`. */
  writeUtf8(buf: Buffer, s: string, offset: number, length: number): number;
}

/** The internals `proto` has, each else its documented call (exported for the test of the fallback). */
export function stringMethods(proto: Internals): StringMethods {
  return {
    oneByteString:
      typeof proto.latin1Slice === "function"
        ? (buf, start, end) => (buf as unknown as Required<Internals>).latin1Slice(start, end)
        : (buf, start, end) => buf.toString("latin1", start, end),
    writeUtf8:
      typeof proto.utf8Write === "function"
        ? (buf, s, offset, length) => (buf as unknown as Required<Internals>).utf8Write(s, offset, length)
        : (buf, s, offset, length) => buf.write(s, offset, length, "utf8"),
  };
}

export const { oneByteString, writeUtf8 } = stringMethods(Buffer.prototype as unknown as Internals);
