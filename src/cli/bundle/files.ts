// Which project files ship: everything but the built-in ignores, .gitignore's and .flashignore's patterns
// (docs/toolkit.md §8.1).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import ignore, { type Ignore } from "ignore";

/** Never shipped: toolkit state, VCS, dependencies, secrets, editor files, tests and docs. `.gitignore` may re-include with `!`. */
export const BUILTIN_IGNORES = [
  ".flash/",
  ".runpod/",
  ".git/",
  ".gitignore",
  ".flashignore",
  "node_modules/",
  "*.tar.gz",
  "*.tgz",
  ".env",
  ".env.*",
  "!.env.example",
  ".vscode/",
  ".idea/",
  ".DS_Store",
  "*.log",
  "coverage/",
  "test/",
  "tests/",
  "__tests__/",
  "*.test.*",
  "*.spec.*",
  "docs/",
  "*.md",
  "!README.md",
];

export interface ProjectFile {
  /** Relative to the project root, with `/` separators. */
  path: string;
  size: number;
}

/** The files, at the project root, whose patterns say what does not ship: git's, then Flash's own. */
export const IGNORE_FILES = [".gitignore", ".flashignore"];

/**
 * The built-in ignores, then the project's `.gitignore`, then its `.flashignore` (same syntax; for what git
 * keeps but workers need not get). Later files may re-include with `!pattern`.
 */
export function ignoreRules(root: string): Ignore {
  const rules = ignore().add(BUILTIN_IGNORES);
  for (const name of IGNORE_FILES) {
    const file = join(root, name);
    if (existsSync(file)) rules.add(readFileSync(file, "utf8"));
  }
  return rules;
}

/** Every file to ship, sorted; ignored folders are not entered, symlinked folders are not followed. */
export function collectFiles(root: string, rules: Ignore = ignoreRules(root)): ProjectFile[] {
  const files: ProjectFile[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = `${prefix}${entry.name}`;
      const full = join(dir, entry.name);
      let isDir = entry.isDirectory();
      let isFile = entry.isFile();
      if (entry.isSymbolicLink()) {
        const target = statSync(full, { throwIfNoEntry: false });
        isFile = target?.isFile() ?? false;
        isDir = false;
      }
      if (isDir) {
        if (!rules.ignores(`${path}/`)) walk(full, `${path}/`);
      } else if (isFile && !rules.ignores(path)) {
        files.push({ path, size: statSync(full).size });
      }
    }
  };
  walk(root, "");
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
