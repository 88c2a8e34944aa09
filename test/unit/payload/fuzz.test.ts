// Fuzzing: random and mutated byte strings never crash, never hang and fail only with the codec's own errors.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeGeneral } from "../../../src/payload/decode.js";
import { DeserializeTimeoutError, decode, encode, PickleError } from "../../../src/payload/index.js";
import { pyValue } from "./arbitraries.js";
import { type Part, pk, sbu } from "./bytes.js";
import { mutate, mutation, records } from "./mutate.js";
import { mismatch, toTyped, type VectorFile } from "./typed.js";

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

  it("the dict fast path and the general path agree on mutated records: same value, or the same error", () => {
    const outcome = (fn: () => unknown): { value: unknown } | { error: string } => {
      try {
        return { value: fn() };
      } catch (e) {
        if (e instanceof PickleError || e instanceof DeserializeTimeoutError) return { error: e.message };
        throw e;
      }
    };
    // protocol 5 (MEMOIZE), protocol 2 (BINPUT), more than 256 memo entries (LONG_BINGET), and hand-made
    // ones: a repeated key, and value strs memoized inside the dict and read back after it
    const keys = [sbu("a"), 0x94, 0x30, sbu("b"), 0x94, 0x30]; // memo 0 and 1
    const dict = (...items: Part[]): Part[] => [0x7d, 0x94, 0x28, items, 0x75]; // the dict is memo 2
    const get = (i: number) => [0x68, i];
    const bases = [
      encode(records(6)),
      encode(records(6), { protocol: 2 }),
      encode(records(90)),
      pk(0x80, 4, keys, dict(get(0), 0x4b, 1, get(0), sbu("x"), 0x94), 0x2e),
      // ({'a': 'x', 'b': 'y'}, 'x', 'y'): 'x' and 'y' are memo 3 and 4
      pk(0x80, 4, keys, dict(get(0), sbu("x"), 0x94, get(1), sbu("y"), 0x94), get(3), get(4), 0x87, 0x2e),
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...bases),
        fc.array(mutation, { minLength: 1, maxLength: 3 }),
        (base, muts) => {
          const bytes = mutate(base, muts);
          const fast = outcome(() => decode(bytes));
          const general = outcome(() => decodeGeneral(bytes));
          if ("error" in fast || "error" in general) expect(fast).toEqual(general);
          else expect(mismatch(toTyped(general.value), fast.value)).toBeNull();
        },
      ),
      { numRuns: 10_000 },
    );
  });
});
