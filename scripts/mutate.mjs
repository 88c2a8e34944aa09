#!/usr/bin/env node
// `npm run mutate [module…]`: StrykerJS mutation testing of the modules that decide correctness, one run per
// module with the in-process tests that exercise it (incremental, so a rerun only tests what changed), within a
// time budget per module. Prints `mutation score <module>: NN%`; docs/testing.md has the figures and the
// surviving mutants judged equivalent.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/** Each module and the tests that can kill its mutants (in-process only: child processes run dist/). */
const MODULES = {
  "src/runtime/queue/worker.ts": [
    "test/conformance/queue-worker.test.ts",
    "test/unit/runtime/queue/worker.test.ts",
  ],
  "src/runtime/queue/http-client.ts": [
    "test/conformance/queue-worker.test.ts",
    "test/conformance/protocol-clients.test.ts",
    "test/unit/runtime/queue/*.test.ts",
  ],
  "src/http/client.ts": ["test/unit/http/*.test.ts", "test/unit/client/breaker.test.ts"],
  "src/http/retry.ts": ["test/unit/http/*.test.ts"],
  "src/cli/deploy/mapping.ts": ["test/deploy/mapping.test.ts"],
  "src/cli/deploy/rest-client.ts": ["test/deploy/rest-client.test.ts"],
  "src/platform/workers/lb-proxy.ts": ["test/platform/lb-routing.test.ts", "test/client/routes.test.ts"],
  "src/job/execute.ts": ["test/unit/job/*.test.ts"],
  "src/runtime/files/download.ts": ["test/files/download.test.ts"],
};

const budgetS = Number(process.env.MUTATE_BUDGET_S ?? "1200");
// Parallel test runners: 1 leaves this 2-core machine usable; a bigger host can take more.
const concurrency = Number(process.env.MUTATE_CONCURRENCY ?? "1");
const wanted = process.argv.slice(2);
const unknown = wanted.filter((m) => !(m in MODULES));
if (unknown.length > 0) {
  console.error(`mutate: unknown module(s) ${unknown.join(", ")}; known: ${Object.keys(MODULES).join(", ")}`);
  process.exit(2);
}
const modules = wanted.length > 0 ? wanted : Object.keys(MODULES);
const out = "reports/mutation";
mkdirSync(out, { recursive: true });

/** The files a pattern names: a path, or `dir/*.test.ts`. */
function expand(pattern) {
  if (!pattern.includes("*")) return [pattern];
  const [prefix, suffix] = basename(pattern).split("*");
  const dir = dirname(pattern);
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith(suffix))
    .map((f) => join(dir, f))
    .sort();
}

/** A hash of the module's tests: Stryker's incremental mode does not see vitest test files change, so a change forces a full run. */
function testsHash(patterns) {
  const hash = createHash("sha256");
  for (const file of patterns.flatMap(expand)) hash.update(file).update(readFileSync(file));
  return hash.digest("hex");
}

let failed = false;
for (const module of modules) {
  const slug = module.replace(/^src\//, "").replace(/\W+/g, "-");
  const report = join(out, `${slug}.json`);
  const config = {
    $schema: "./node_modules/@stryker-mutator/core/schema/stryker-schema.json",
    testRunner: "vitest",
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: "vitest.mutate.config.ts", related: false },
    mutate: [module],
    coverageAnalysis: "perTest",
    incremental: true,
    incrementalFile: join(out, `${slug}.incremental.json`),
    reporters: ["json", "progress"],
    jsonReporter: { fileName: report },
    concurrency,
    timeoutMS: 5_000,
    tempDirName: ".stryker-tmp",
    cleanTempDir: "always",
  };
  const configFile = join(out, `${slug}.stryker.json`);
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const hashFile = join(out, `${slug}.tests.sha256`);
  const hash = testsHash(MODULES[module]);
  const force = !existsSync(hashFile) || readFileSync(hashFile, "utf8") !== hash;
  const started = Date.now();
  const run = spawnSync("npx", ["stryker", "run", configFile, ...(force ? ["--force"] : [])], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, MUTATE_TESTS: MODULES[module].join(",") },
    timeout: budgetS * 1000,
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (!run.error && run.status === 0) writeFileSync(hashFile, hash);
  if (run.error || run.status !== 0 || !existsSync(report)) {
    failed = true;
    const why =
      run.error?.code === "ETIMEDOUT"
        ? `over its ${budgetS} s budget (MUTATE_BUDGET_S)`
        : `exit ${run.status}`;
    console.log(`mutation score ${module}: not measured (${why}, ${seconds} s)`);
    continue;
  }
  const counts = { Killed: 0, Timeout: 0, Survived: 0, NoCoverage: 0 };
  const survivors = [];
  const files = JSON.parse(readFileSync(report, "utf8")).files;
  for (const [file, { mutants }] of Object.entries(files)) {
    for (const m of mutants) {
      if (m.status in counts) counts[m.status]++;
      if (m.status === "Survived" || m.status === "NoCoverage") {
        survivors.push(
          `  ${m.status} ${file}:${m.location.start.line} ${m.mutatorName}: ${m.replacement ?? ""}`.slice(
            0,
            160,
          ),
        );
      }
    }
  }
  const detected = counts.Killed + counts.Timeout;
  const valid = detected + counts.Survived + counts.NoCoverage;
  const score = valid === 0 ? 100 : (100 * detected) / valid;
  console.log(
    `mutation score ${module}: ${score.toFixed(0)}% (${detected} of ${valid} mutants detected, ${counts.Survived} survived, ${counts.NoCoverage} not covered; ${seconds} s)`,
  );
  if (process.env.MUTATE_LIST === "1") for (const line of survivors) console.log(line);
}
process.exit(failed ? 1 : 0);
