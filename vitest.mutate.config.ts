// The vitest config Stryker runs under `npm run mutate` (scripts/mutate.mjs): only the in-process tests named
// in MUTATE_TESTS, since a child process runs the built CLI from dist/ and never sees a mutant.
import { defineConfig } from "vitest/config";

const tests = (process.env.MUTATE_TESTS ?? "").split(",").filter(Boolean);

export default defineConfig({
  test: {
    include: tests,
    exclude: ["node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    setupFiles: ["test/fuzz-seed.ts"],
  },
});
