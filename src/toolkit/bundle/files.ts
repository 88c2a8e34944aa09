// Which project files ship: everything but the built-in ignores, the credential files, .gitignore's and
// .flashignore's patterns; a symbolic link ships as a link, within the project only (docs/toolkit.md §8.1).
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, posix, relative, sep } from "node:path";
import ignore, { type Ignore } from "ignore";
import { credentialRules } from "./credentials.js";

/** Never shipped: toolkit state, VCS, dependencies, editor files, tests and docs. `.gitignore` may re-include with `!`. */
export const BUILTIN_IGNORES = [
  ".flash/",
  ".git/",
  ".gitignore",
  ".flashignore",
  "node_modules/",
  "*.tar.gz",
  "*.tgz",
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
  /** A symbolic link: the target it ships with (its content is never read). */
  link?: string;
}

/** A symbolic link of the project: the target it ships with, or why it was left out. */
export interface ProjectLink {
  path: string;
  /** Relative, inside the project, when shipped; as written here when left out. */
  target: string;
  /** Why it does not ship: what it points at is outside the project, missing, or not shipped itself. */
  leftOut?: string;
}

export interface CollectedFiles {
  /** Every file and link to ship, sorted by path. */
  files: ProjectFile[];
  /** Every link the ignore rules do not exclude, shipped or left out, sorted by path. */
  links: ProjectLink[];
  /** The credential files and folders left out (a folder ends in `/`), sorted. */
  credentials: string[];
  /** Paths an import may name: the shipped files, and each through the shipped links that reach it. */
  reachable: string[];
}

/** The files, at the project root, whose patterns say what does not ship: git's, then Flash's own. */
export const IGNORE_FILES = [".gitignore", ".flashignore"];

/**
 * The built-in ignores and the credential files, then the project's `.gitignore`, then its `.flashignore` (same
 * syntax; for what git keeps but workers need not get). Later files may re-include with `!pattern`.
 */
export function ignoreRules(root: string): Ignore {
  const rules = ignore().add(BUILTIN_IGNORES).add(credentialRules());
  for (const name of IGNORE_FILES) {
    const file = join(root, name);
    if (existsSync(file)) rules.add(readFileSync(file, "utf8"));
  }
  return rules;
}

const byPath = <T extends { path: string }>(a: T, b: T) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
const toPosix = (path: string) => path.split(sep).join("/");

/** A link found by the walk, and the project path it reaches when that is inside the project. */
interface FoundLink {
  path: string;
  written: string;
  inside?: string;
  exists: boolean;
}

/**
 * Every file and link to ship, and the credential files left out. Ignored folders are not entered, and no
 * symbolic link is followed: a link ships as a link when what it reaches ships, and is left out otherwise.
 */
export function collectFiles(root: string, rules: Ignore = ignoreRules(root)): CollectedFiles {
  const files: ProjectFile[] = [];
  const found: FoundLink[] = [];
  const credentials: string[] = [];
  const credential = credentialRules();
  const realRoot = realpathSync(root);
  const leftOut = (path: string) => {
    if (!rules.ignores(path)) return false;
    if (credential.ignores(path)) credentials.push(path);
    return true;
  };
  const walk = (dir: string, prefix: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = `${prefix}${entry.name}`;
      const full = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!leftOut(`${path}/`)) walk(full, `${path}/`);
      } else if (entry.isSymbolicLink()) {
        const reached = statSync(full, { throwIfNoEntry: false });
        if (leftOut(path) || (reached?.isDirectory() && leftOut(`${path}/`))) continue;
        found.push({ path, ...readLink(realRoot, full), exists: reached !== undefined });
      } else if (entry.isFile() && !leftOut(path)) {
        files.push({ path, size: statSync(full).size });
      }
    }
  };
  walk(root, "");
  const regular = new Set(files.map((file) => file.path));
  const links = found.map((link) => placeLink(link, realRoot, regular, rules)).sort(byPath);
  for (const link of links) if (!link.leftOut) files.push({ path: link.path, size: 0, link: link.target });
  files.sort(byPath);
  return { files, links, credentials: credentials.sort(), reachable: reachablePaths(regular, found, links) };
}

/** What a link says, and the project path it reaches (`.` for the root) when that is inside the project. */
export function readLink(realRoot: string, full: string): { written: string; inside?: string } {
  const written = toPosix(readlinkSync(full));
  let real: string | undefined;
  try {
    real = realpathSync(full);
  } catch {
    // A dangling link (or a loop) reaches nothing.
    return { written };
  }
  const rel = relative(realRoot, real);
  if (rel.startsWith("..") || isAbsolute(rel)) return { written };
  return { written, inside: toPosix(rel) || "." };
}

/** The target a link inside the project ships with: as written when it stays inside, else relative from `path`. */
export function shippedTarget(path: string, written: string, inside: string): string {
  const lexical = posix.normalize(posix.join(posix.dirname(path), written));
  if (!posix.isAbsolute(written) && lexical !== ".." && !lexical.startsWith("../")) return written;
  // An absolute link into the project would point outside /app in the image; extractors refuse one that climbs out.
  return posix.relative(posix.dirname(path), inside) || ".";
}

/** A link ships when what it reaches ships; else it is left out, saying why. */
function placeLink(link: FoundLink, realRoot: string, regular: Set<string>, rules: Ignore): ProjectLink {
  const { path, written, inside } = link;
  if (inside === undefined) {
    return { path, target: written, leftOut: link.exists ? "outside the project" : "not found" };
  }
  const folder = statSync(join(realRoot, inside)).isDirectory();
  const ships = folder ? inside === "." || !rules.ignores(`${inside}/`) : regular.has(inside);
  if (!ships) return { path, target: written, leftOut: "its target is not shipped" };
  return { path, target: shippedTarget(path, written, inside) };
}

/** The shipped paths, plus each shipped file seen through a shipped link to a folder holding it. */
function reachablePaths(regular: Set<string>, found: FoundLink[], links: ProjectLink[]): string[] {
  const shipped = new Set(links.filter((link) => !link.leftOut).map((link) => link.path));
  const reachable = new Set([...regular, ...shipped]);
  for (const { path: link, inside } of found) {
    if (!shipped.has(link) || inside === undefined) continue;
    const under = inside === "." ? "" : `${inside}/`;
    for (const path of regular) {
      if (path.startsWith(under)) reachable.add(`${link}/${path.slice(under.length)}`);
    }
  }
  return [...reachable];
}
