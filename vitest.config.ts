import { defineConfig } from "vitest/config";

/** In-process suites that need no build, child process, browser or Python: `npm run test:unit`, seconds. */
const UNIT = [
  "test/config/**/*.test.ts",
  "test/errors/**/*.test.ts",
  "test/http/**/*.test.ts",
  "test/job/**/*.test.ts",
  "test/layout/**/*.test.ts",
  "test/log/**/*.test.ts",
  "test/payload/**/*.test.ts",
  "test/worker/**/*.test.ts",
  "test/cli/options.test.ts",
  "test/client/breaker.test.ts",
  "test/client/credentials.test.ts",
  "test/console/units.test.ts",
  "test/platform/units.test.ts",
  "test/reliability/take-parser.fuzz.test.ts",
  "test/routes/openai.test.ts",
  "test/routes/rules.test.ts",
  "test/routes/server.test.ts",
  "test/routes/settings.test.ts",
  "test/server/declare.test.ts",
];

export default defineConfig({
  test: {
    exclude: ["test/bench/**", "node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // every fuzz test draws from one seed: fixed by default, FUZZ_SEED=random or =<n> to change it
    setupFiles: ["test/fuzz-seed.ts"],
    projects: [
      { extends: true, test: { name: "unit", include: UNIT } },
      // Real servers, child processes (the built CLI in dist/), Python, a browser: `npm test` builds first.
      {
        extends: true,
        test: {
          name: "system",
          include: ["test/**/*.test.ts"],
          exclude: [...UNIT, "test/bench/**", "node_modules/**"],
        },
      },
    ],
  },
});
