// The one seed of every fuzz test: fixed unless FUZZ_SEED says otherwise, so CI runs are repeatable.
import fc from "fast-check";

/** CI's seed: any fixed number works; changing it is a new set of cases, not a fix. */
const FIXED_SEED = 20261126;

/** FUZZ_SEED unset: the fixed seed; `random`: a new one each run; a number: that one (to replay a failure). */
export function fuzzSeed(value = process.env.FUZZ_SEED): number {
  if (value === undefined || value === "") return FIXED_SEED;
  if (value === "random") return (Math.random() * 0x100000000) | 0;
  const n = Number(value);
  if (!Number.isSafeInteger(n))
    throw new Error(`FUZZ_SEED must be an integer or "random", not ${JSON.stringify(value)}`);
  return n | 0;
}

/** Read once per test file (vitest runs this as a setup file), so fast-check and hand-rolled fuzzers share it. */
export const FUZZ_SEED = fuzzSeed();

// fast-check puts the seed in every failure message: `FUZZ_SEED=<seed> npm test` replays it
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: FUZZ_SEED });
