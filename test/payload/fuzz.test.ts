// Fuzzing: random and mutated byte strings never crash, never hang and fail only with the codec's own errors.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DeserializeTimeoutError, decode, encode, PickleError } from "../../src/payload/index.js";
import { pyValue } from "./arbitraries.js";
import type { VectorFile } from "./typed.js";

/** Decoding either returns a value or throws one of the codec's errors; a TypeError or RangeError is a bug. */
function decodesCleanly(bytes: Uint8Array): boolean {
  try {
    decode(bytes);
    return true;
  } catch (e) {
    if (e instanceof PickleError || e instanceof DeserializeTimeoutError) return true;
    throw e;
  }
}

const seeds = (
  JSON.parse(readFileSync(new URL("./vectors.json", import.meta.url), "utf8")) as VectorFile
).vectors
  .flatMap((v) => v.payloads.map((p) => new Uint8Array(Buffer.from(p.b64, "base64"))))
  .filter((b) => b.length < 4000);

const mutation = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function mutate(src: Uint8Array, muts: Mutation[]): Uint8Array {
  const b = [...src];
  for (const m of muts) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === "flip") b[at] = (b[at] ?? 0) ^ m.bits;
    else if (m.kind === "insert") b.splice(at, 0, m.byte);
    else if (m.kind === "delete") b.splice(at, 1);
    else b.length = at;
  }
  return Uint8Array.from(b);
}

describe("fuzzing the decoder", () => {
  it("random bytes", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), decodesCleanly), { numRuns: 5000 });
  });

  it("random bytes after a protocol-5 header", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (tail) =>
        decodesCleanly(Uint8Array.from([0x80, 5, ...tail])),
      ),
      { numRuns: 5000 },
    );
  });

  it("mutated real payloads (bit flips, inserted, deleted bytes, truncation)", () => {
    expect(seeds.length).toBeGreaterThan(500);
    fc.assert(
      fc.property(
        fc.constantFrom(...seeds),
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        (seed, muts) => decodesCleanly(mutate(seed, muts)),
      ),
      { numRuns: 10_000 },
    );
  });

  it("every prefix of an encoded value fails as truncated, never with another error", () => {
    fc.assert(
      fc.property(pyValue, (v) => {
        const bytes = encode(v);
        for (let n = 0; n < bytes.length; n++) {
          expect(() => decode(bytes.subarray(0, n))).toThrow(PickleError);
        }
      }),
      { numRuns: 200 },
    );
  });
});
