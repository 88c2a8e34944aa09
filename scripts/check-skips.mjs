// Fails a CI run in which a test was skipped: reads vitest's JSON report (--reporter=json --outputFile.json=…).
// `npm test` on a laptop may skip what needs root (the deploy e2e) or the image build; CI must not, quietly.
// Usage: node scripts/check-skips.mjs <report.json> [test file that must have run and passed…]
import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The skips a healthy CI run has, each with why it is not a hole. Anything else skipped fails the run. */
const EXPECTED = [
  {
    file: "test/e2e/images.test.ts",
    test: / skipped: FLASH_IMAGE_TESTS is not 1$/,
    allowed: () => process.env.FLASH_IMAGE_TESTS !== "1",
    why: "the images are built and smoke-tested in a run of their own (FLASH_IMAGE_TESTS=1), checked there",
  },
  {
    file: "test/e2e/remote-python.test.ts",
    test: /^remote functions from Python needs Debian's python3 with cloudpickle$/,
    allowed: () => true,
    why: "the failure that stands in for the suite when no Python with cloudpickle is found; skipped when one is",
  },
  {
    file: "test/e2e/remote-python.test.ts",
    test: / class mode: a class with a parameter property$/,
    allowed: () => true,
    why: "runs in the tsx-fallback variant only (type stripping cannot compile parameter properties)",
  },
  {
    file: "test/cli/ts-cache.test.ts",
    test: /^flash run with a \.ts handler on a Node without type stripping /,
    allowed: () => true,
    why: "needs a Node without type stripping; on one with it, the stripping path is what runs",
  },
];

const [reportPath, ...required] = process.argv.slice(2);
if (!reportPath) {
  console.error("usage: node scripts/check-skips.mjs <vitest-report.json> [test file that must have run…]");
  process.exit(2);
}
/** @type {{ testResults: { name: string; assertionResults: { fullName: string; status: string }[] }[] }} */
const report = JSON.parse(readFileSync(reportPath, "utf8"));

const problems = [];
let expected = 0;
const ran = new Set();
for (const file of report.testResults) {
  const name = relative(ROOT, file.name);
  for (const test of file.assertionResults) {
    if (test.status === "passed") ran.add(name);
    if (!["skipped", "pending", "todo", "disabled"].includes(test.status)) continue;
    const known = EXPECTED.find((e) => e.file === name && e.test.test(test.fullName) && e.allowed());
    if (known) expected++;
    else problems.push(`skipped: ${name} > ${test.fullName}`);
  }
}
for (const file of required) {
  if (!ran.has(file)) problems.push(`did not run: ${file} (no test in it passed)`);
}

if (problems.length > 0) {
  console.error(`check-skips: ${problems.length} test(s) or suite(s) CI must run did not run:`);
  for (const problem of problems) console.error(`  ${problem}`);
  console.error(
    "check-skips: CI runs as root with scripts/test-deps.sh's packages, so nothing should skip there;",
  );
  console.error(
    "check-skips: fix the cause, or add the skip to EXPECTED in scripts/check-skips.mjs with why.",
  );
  process.exit(1);
}
console.log(`check-skips: no unexpected skip (${expected} expected, listed in scripts/check-skips.mjs)`);
