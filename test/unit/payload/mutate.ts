// Mutations of real pickles for the fuzz tests: bit flips, inserted and deleted bytes, truncation.
import fc from "fast-check";

export const mutation = fc.oneof(
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
);
export type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

/** `src` with the mutations applied in order; each position is taken modulo the length at that step. */
export function mutate(src: Uint8Array, muts: readonly Mutation[]): Uint8Array {
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

/** The records shape the payload bench and the fast-path tests use: a list of small str-keyed dicts. */
export const records = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: i, name: `u${i}`, score: i / 3, ok: i % 2 === 0, none: null }));
