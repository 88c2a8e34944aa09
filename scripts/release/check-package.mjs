#!/usr/bin/env node
// What npm would publish, checked before it is: every file on an allow-list (no tests, fixtures, benchmarks,
// source maps or sources), within the size budget README.md states, each export and `bin` in it, the metadata
// provenance needs, and — given the tarball — how TypeScript and Node resolve its exports (@arethetypeswrong/cli).
// Usage: node scripts/release/check-package.mjs [--dir PACKAGE_DIR] [--tarball FILE]
// Prints a JSON summary on stdout; exits 1 naming each violation on stderr.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The budget README.md states ("What gets published"): the tarball, the unpacked files and their count. */
export const BUDGET = { packedBytes: 1_000_000, unpackedBytes: 3_000_000, files: 600 };

/** Every published path matches one: what the package needs at run time, its types, and its documents. */
const ALLOWED = [
  /^package\.json$/,
  /^(README\.md|LICENSE|CHANGELOG\.md)$/,
  /^Dockerfile\.(cpu|gpu)$/, // flash image base builds the runtime images from them
  /^docker\/(build|entrypoint|healthcheck|install)\.sh$/, // what those Dockerfiles copy; build.sh makes the stand-in
  /^docker\/README\.md$/,
  /^dist\/.+\.(js|d\.ts)$/,
  /^dist\/heartbeat-thread\.cjs$/, // the heartbeat thread's bundle
  /^dist\/package-lock\.json$/, // the runtime images' npm ci of an installed package
  /^dist\/platform\/console\/page\/[\w-]+\.(html|css)$/, // the console page
];

/** Never published, whatever the allow-list says, each with why. */
const DENIED = [
  [/\.map$/, "a source map (the package ships no sources to map to)"],
  [/\.tsbuildinfo$/, "a TypeScript build cache"],
  [/(^|\/)(test|tests|__tests__|fixtures?|smoke)(\/|$)/, "a test, fixture or benchmark"],
  // test/bench/ is the repository's; dist/toolkit/bench/ is `flash bench`, which ships.
  [/^bench(marks?)?\/|\.(test|spec|bench)\.[cm]?js$/, "a test, fixture or benchmark"],
  [/(^|\/)\.[^/]+$/, "a dot file"],
  [/\.ts$/, "a TypeScript source (.d.ts aside)"],
];

/**
 * attw's problems the package accepts, with why. CommonJS `require()` of these ES modules works on every Node
 * that `engines` allows (^20.19.0 || >=22.12.0 load ES modules for require, and test/e2e/package.test.ts
 * requires it); attw's bundled TypeScript predates require(esm) and still calls it dynamic-import only.
 */
const ACCEPTED_PROBLEMS = new Set(["CJSResolvesToESM@node16-cjs"]);

/** `npm pack --dry-run --json` in `dir`: the files npm would publish. */
export function packList(dir) {
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [pack] = JSON.parse(out);
  return pack;
}

/** The violations of the contents, the budget and the metadata rules. */
export function contentViolations(pack, manifest) {
  const problems = [];
  const paths = new Set(pack.files.map((f) => f.path));
  for (const path of paths) {
    const denied = DENIED.find(([re]) => re.test(path) && !/\.d\.ts$/.test(path));
    if (denied) problems.push(`${path}: ${denied[1]}`);
    else if (!ALLOWED.some((re) => re.test(path))) problems.push(`${path}: not on the allow-list`);
  }
  if (pack.size > BUDGET.packedBytes)
    problems.push(`tarball ${pack.size} B over the budget ${BUDGET.packedBytes} B`);
  if (pack.unpackedSize > BUDGET.unpackedBytes)
    problems.push(`unpacked ${pack.unpackedSize} B over the budget ${BUDGET.unpackedBytes} B`);
  if (pack.entryCount > BUDGET.files)
    problems.push(`${pack.entryCount} files over the budget ${BUDGET.files}`);
  // Every file an export, `types`, `main` or `bin` names.
  const targets = [manifest.main, manifest.types, ...Object.values(manifest.bin ?? {})];
  const walk = (v) => (typeof v === "string" ? targets.push(v) : v && Object.values(v).forEach(walk));
  walk(manifest.exports);
  for (const target of targets.filter(Boolean)) {
    const path = target.replace(/^\.\//, "");
    if (!paths.has(path)) problems.push(`${target}: named by package.json, not in the package`);
  }
  for (const doc of ["README.md", "LICENSE", "CHANGELOG.md"])
    if (!paths.has(doc)) problems.push(`${doc}: missing`);
  // What npm publish --provenance checks against the workflow's repository, and what users are promised.
  if (!/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/.test(manifest.repository?.url ?? ""))
    problems.push(
      `repository.url: expected git+https://github.com/OWNER/NAME.git, got ${manifest.repository?.url}`,
    );
  if (!manifest.license) problems.push("license: missing");
  if (!manifest.engines?.node) problems.push("engines.node: missing");
  return problems;
}

/** attw's report on the tarball (strict profile): every problem as KIND@RESOLUTION on ENTRYPOINT. */
export function typeResolution(tarball) {
  const attw = spawnSync(
    process.execPath,
    [join(REPO, "node_modules/@arethetypeswrong/cli/dist/index.js"), tarball, "--format", "json"],
    { encoding: "utf8" },
  );
  if (attw.status !== 0 && attw.status !== 1) throw new Error(`attw failed (${attw.status}): ${attw.stderr}`);
  const { analysis } = JSON.parse(attw.stdout);
  const problems = analysis.problems.map((p) => ({
    kind: p.kind,
    resolution: p.resolutionKind,
    entrypoint: p.entrypoint,
  }));
  return {
    typescript: analysis.buildTools?.typescript,
    entrypoints: Object.keys(analysis.entrypoints),
    problems,
    unaccepted: problems.filter((p) => !ACCEPTED_PROBLEMS.has(`${p.kind}@${p.resolution}`)),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { dir: { type: "string" }, tarball: { type: "string" } } });
  const dir = resolve(values.dir ?? REPO);
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const pack = packList(dir);
  const violations = contentViolations(pack, manifest);
  const types = values.tarball ? typeResolution(resolve(values.tarball)) : undefined;
  for (const p of types?.unaccepted ?? [])
    violations.push(`types: ${p.kind} for ${p.entrypoint} under ${p.resolution} resolution`);
  const summary = {
    name: pack.name,
    version: pack.version,
    files: pack.entryCount,
    packedBytes: pack.size,
    unpackedBytes: pack.unpackedSize,
    budget: BUDGET,
    types,
    violations,
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  for (const v of violations) process.stderr.write(`check-package: ${v}\n`);
  process.exit(violations.length > 0 ? 1 : 0);
}
