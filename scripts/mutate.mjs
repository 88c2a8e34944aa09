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
    "test/unit/runtime/queue/worker-take.test.ts",
    "test/unit/runtime/queue/worker-deliver.test.ts",
  ],
  "src/runtime/queue/http-client.ts": [
    "test/conformance/queue-worker.test.ts",
    "test/conformance/protocol-clients.test.ts",
    "test/unit/runtime/queue/*.test.ts",
  ],
  "src/http/client.ts": ["test/unit/http/*.test.ts", "test/unit/client/breaker.test.ts"],
  "src/http/retry.ts": ["test/unit/http/*.test.ts"],
  "src/http/h1.ts": ["test/unit/http/h1.test.ts"],
  "src/toolkit/deploy/mapping.ts": ["test/deploy/mapping.test.ts"],
  "src/toolkit/rest/client.ts": ["test/deploy/rest-client.test.ts"],
  "src/platform/workers/lb-proxy.ts": ["test/unit/platform/workers/lb-proxy.test.ts"],
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

/** Runs Stryker on one module (or line ranges of it) with the module's tests; false when over budget or failed. */
function stryker(module, mutate, { slug, report, incremental, force }) {
  const config = {
    $schema: "./node_modules/@stryker-mutator/core/schema/stryker-schema.json",
    testRunner: "vitest",
    plugins: ["@stryker-mutator/vitest-runner"],
    vitest: { configFile: "vitest.mutate.config.ts", related: false },
    mutate,
    coverageAnalysis: "perTest",
    incremental,
    incrementalFile: join(out, `${slug}.incremental.json`),
    reporters: ["json", "progress"],
    jsonReporter: { fileName: report },
    concurrency,
    timeoutMS: 5_000,
    // One sandbox folder per run, each kept out of the others' sandboxes, so two modules can run at once.
    tempDirName: `.stryker-tmp-${slug}`,
    ignorePatterns: ["/.stryker-tmp*"],
    cleanTempDir: "always",
  };
  const configFile = join(out, `${slug}.stryker.json`);
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const run = spawnSync("npx", ["stryker", "run", configFile, ...(force ? ["--force"] : [])], {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, MUTATE_TESTS: MODULES[module].join(",") },
    timeout: budgetS * 1000,
  });
  if (run.error || run.status !== 0 || !existsSync(report)) {
    return run.error?.code === "ETIMEDOUT"
      ? `over its ${budgetS} s budget (MUTATE_BUDGET_S)`
      : `exit ${run.status}`;
  }
  return undefined;
}

const sameMutant = (a, b) =>
  a.mutatorName === b.mutatorName &&
  a.replacement === b.replacement &&
  a.location.start.line === b.location.start.line &&
  a.location.start.column === b.location.start.column &&
  a.location.end.line === b.location.end.line &&
  a.location.end.column === b.location.end.column;

/**
 * MUTATE_SURVIVORS=1: only the mutants the last full report left alive are run again (with the tests as they are
 * now), and the report is updated with those that are now detected. Far quicker than a full run after adding tests.
 */
function rerunSurvivors(module, slug, report) {
  if (!existsSync(report))
    return "no earlier report to take the survivors from (run without MUTATE_SURVIVORS first)";
  const earlier = JSON.parse(readFileSync(report, "utf8"));
  const file = earlier.files[module];
  if (file.source !== readFileSync(module, "utf8"))
    return "the module changed since its report: run it whole";
  const alive = file.mutants.filter((m) => m.status === "Survived" || m.status === "NoCoverage");
  if (alive.length === 0) return undefined;
  const ranges = [...new Set(alive.map((m) => `${module}:${m.location.start.line}-${m.location.end.line}`))];
  const rerun = join(out, `${slug}.survivors.json`);
  const why = stryker(module, ranges, {
    slug: `${slug}.survivors`,
    report: rerun,
    incremental: false,
    force: false,
  });
  if (why) return why;
  const now = Object.values(JSON.parse(readFileSync(rerun, "utf8")).files).flatMap((f) => f.mutants);
  for (const m of alive) {
    const again = now.find((n) => sameMutant(n, m));
    if (again && (again.status === "Killed" || again.status === "Timeout")) m.status = again.status;
  }
  writeFileSync(report, JSON.stringify(earlier));
  return undefined;
}

let failed = false;
for (const module of modules) {
  const slug = module.replace(/^src\//, "").replace(/\W+/g, "-");
  const report = join(out, `${slug}.json`);
  const hashFile = join(out, `${slug}.tests.sha256`);
  const hash = testsHash(MODULES[module]);
  const survivorsOnly = process.env.MUTATE_SURVIVORS === "1";
  const force = !existsSync(hashFile) || readFileSync(hashFile, "utf8") !== hash;
  const started = Date.now();
  const why = survivorsOnly
    ? rerunSurvivors(module, slug, report)
    : stryker(module, [module], { slug, report, incremental: true, force });
  const seconds = Math.round((Date.now() - started) / 1000);
  if (why) {
    failed = true;
    console.log(`mutation score ${module}: not measured (${why}, ${seconds} s)`);
    continue;
  }
  if (!survivorsOnly) writeFileSync(hashFile, hash);
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
    `mutation score ${module}: ${score.toFixed(0)}% (${detected} of ${valid} mutants detected, ${counts.Survived} survived, ${counts.NoCoverage} not covered; ${seconds} s${survivorsOnly ? ", survivors rerun" : ""})`,
  );
  if (process.env.MUTATE_LIST === "1") for (const line of survivors) console.log(line);
}
process.exit(failed ? 1 : 0);
