import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    exclude: ["test/bench/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // every fuzz test draws from one seed: fixed by default, FUZZ_SEED=random or =<n> to change it
    setupFiles: ["test/fuzz-seed.ts"],
    projects: [
      // In-process suites that need no build, browser or platform (`npm run test:unit`, seconds): test/unit/, by folder.
      { extends: true, test: { name: "unit", include: ["test/unit/**/*.test.ts"] } },
      // Real servers, child processes (the built CLI in dist/), Python, a browser: `npm test` builds first.
      {
        extends: true,
        test: {
          name: "system",
          // Rebuilds dist/ first when a source is newer (these tests run the built CLI).
          globalSetup: ["test/fresh-build.ts"],
          include: ["test/**/*.test.ts"],
          exclude: ["test/unit/**", "test/bench/**", "node_modules/**"],
        },
      },
    ],
  },
});
