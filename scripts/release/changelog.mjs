#!/usr/bin/env node
// `npm version`'s `version` script: package.json has the new version by then; what CHANGELOG.md holds under
// "## Unreleased" moves under "## <version>", and an empty "Unreleased" stays on top for the next changes.
// Refuses a version the file already has a heading for, and an empty "Unreleased" (a release says what changed).
// Usage: node scripts/release/changelog.mjs [PACKAGE_DIR]
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const dir = resolve(process.argv[2] ?? ".");
const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const file = join(dir, "CHANGELOG.md");
const text = readFileSync(file, "utf8");
const fail = (message) => {
  process.stderr.write(`changelog: ${message}\n`);
  process.exit(1);
};
const escaped = version.replaceAll(".", "\\.");
if (new RegExp(`^## ${escaped}$`, "m").test(text)) fail(`CHANGELOG.md has a "## ${version}" heading already`);
const match = /^## Unreleased\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(text);
if (!match) fail('CHANGELOG.md has no "## Unreleased" heading');
if (match[1].trim() === "") fail(`nothing under "## Unreleased" to release as ${version}`);
const next = `${text.slice(0, match.index)}## Unreleased\n\n## ${version}\n${match[1]}${text.slice(match.index + match[0].length)}`;
writeFileSync(file, next);
process.stdout.write(`changelog: "## Unreleased" is now "## ${version}"\n`);
