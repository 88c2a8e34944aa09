import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/bench/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // every fuzz test draws from one seed: fixed by default, FUZZ_SEED=random or =<n> to change it
    setupFiles: ["test/fuzz-seed.ts"],
  },
});
