// The mechanical rules of docs/design.md §3–§4 checked on the text of src/: errors are FlashErrors checked by code,
// and one backoff. Every exception is in ALLOWED below, with its reason; nothing else may break a rule.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../process.js";

const SRC = join(ROOT, "src");

type Rule = "throw" | "extends" | "instanceof" | "backoff";

interface Allowed {
  rule: Rule;
  /** A file under src/, or a folder ending in "/" for every file below it. */
  path: string;
  /** Text on the offending line, so an allowance covers that one place and not the whole file. */
  line?: string;
  reason: string;
}

/** The one list of places allowed to break a rule (docs/design.md §4.4 and src/flash-error.ts point here). */
const ALLOWED: readonly Allowed[] = [
  ...(["throw", "extends", "instanceof", "backoff"] as const).map((rule) => ({
    rule,
    path: "platform/console/page/",
    reason:
      "the console page runs in the browser: its tsconfig's rootDir (src/platform/console) keeps src/flash-error.ts and src/http/retry.ts out, one copy of it is loaded, and one tab's reconnects cannot stampede",
  })),
  {
    rule: "extends",
    path: "flash-error.ts",
    line: "abstract class FlashError extends Error",
    reason: "FlashError itself: the base every other error extends",
  },
  {
    rule: "throw",
    path: "http/h1.ts",
    line: "new TypeError(`Header name must be a valid HTTP token",
    reason:
      "h1 stands in for node:http, which throws these TypeErrors (ERR_INVALID_HTTP_TOKEN) for the same headers",
  },
  {
    rule: "throw",
    path: "http/h1.ts",
    line: "new TypeError(`Invalid character in header content",
    reason:
      "h1 stands in for node:http, which throws this TypeError (ERR_INVALID_CHAR) for the same header value",
  },
  {
    rule: "throw",
    path: "platform/server.ts",
    line: "The platform has no TCP address",
    reason: "an assertion: a server listening on a host and port always has a TCP address",
  },
  {
    rule: "throw",
    path: "platform/workers/pod-runner.ts",
    line: "the container tool gave no command to run",
    reason: "an assertion: imageCommand() already refuses an image with neither ENTRYPOINT nor CMD",
  },
  {
    rule: "backoff",
    path: "toolkit/deploy/mapping.ts",
    line: "the API takes a power of two",
    reason: "a vCPU count rounded to a power of two for a message, not a wait",
  },
];

const BUILTIN_ERRORS = [
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "EvalError",
  "URIError",
  "AggregateError",
];

interface Source {
  path: string;
  text: string;
}

function sources(): Source[] {
  return readdirSync(SRC, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".ts"))
    .map((path) => ({ path: path.split("\\").join("/"), text: readFileSync(join(SRC, path), "utf8") }));
}

/** The line of `text` holding offset `at`. */
function lineAt(text: string, at: number): string {
  const start = text.lastIndexOf("\n", at) + 1;
  const end = text.indexOf("\n", at);
  return text.slice(start, end < 0 ? text.length : end);
}

/** The line of the match and the line after (a throw's message often starts on the next line). */
function around(text: string, at: number): string {
  const next = text.indexOf("\n", at);
  return next < 0 ? lineAt(text, at) : `${lineAt(text, at)}\n${lineAt(text, next + 1)}`;
}

function allowed(rule: Rule, path: string, context: string): boolean {
  return ALLOWED.some(
    (a) =>
      a.rule === rule &&
      (a.path.endsWith("/") ? path.startsWith(a.path) : path === a.path) &&
      (a.line === undefined || context.includes(a.line)),
  );
}

/** Each match of `pattern` in src/ that ALLOWED does not cover, as `path: line`. */
function offences(
  rule: Rule,
  pattern: RegExp,
  keep: (match: RegExpMatchArray) => boolean = () => true,
): string[] {
  const found: string[] = [];
  for (const { path, text } of sources()) {
    for (const match of text.matchAll(pattern)) {
      if (!keep(match)) continue;
      const context = around(text, match.index ?? 0);
      if (!allowed(rule, path, context)) found.push(`${path}: ${lineAt(text, match.index ?? 0).trim()}`);
    }
  }
  return found;
}

/** Every error class src/ defines: those extending a built-in error or another of them, and any named *Error. */
function ourErrorClasses(): Set<string> {
  const parents = new Map<string, string>();
  for (const { text } of sources()) {
    for (const match of text.matchAll(/\bclass\s+(\w+)(?:<[^>{]*>)?\s+extends\s+(\w+)/g))
      parents.set(match[1]!, match[2]!);
  }
  const errors = new Set<string>([...parents.keys()].filter((name) => name.endsWith("Error")));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [name, parent] of parents) {
      if (!errors.has(name) && (BUILTIN_ERRORS.includes(parent) || errors.has(parent))) {
        errors.add(name);
        grew = true;
      }
    }
  }
  for (const builtin of BUILTIN_ERRORS) errors.delete(builtin);
  return errors;
}

describe("src/ errors", () => {
  it("throws, rejects and aborts with no plain Error, TypeError or RangeError outside ALLOWED: each is a FlashError", () => {
    const pattern =
      /(?:\bthrow\s+|\breject\(\s*|\.abort\(\s*)(?:Object\.assign\(\s*)?new\s+(?:Error|TypeError|RangeError)\s*\(/g;
    expect(offences("throw", pattern)).toEqual([]);
  });

  it("has no class extending a built-in error directly but FlashError and ALLOWED", () => {
    const pattern = new RegExp(
      `\\bclass\\s+\\w+(?:<[^>{]*>)?\\s+extends\\s+(?:${BUILTIN_ERRORS.join("|")})\\b`,
      "g",
    );
    expect(offences("extends", pattern)).toEqual([]);
  });

  it("never tests instanceof on its own error classes: two copies of the package may be loaded, so by code", () => {
    const ours = ourErrorClasses();
    expect(ours.has("FlashError")).toBe(true);
    expect(offences("instanceof", /\binstanceof\s+(\w+)/g, (match) => ours.has(match[1]!))).toEqual([]);
  });
});

describe("src/ backoff", () => {
  it("computes exponential waits in one place, backoffMs in src/http/retry.ts", () => {
    // A power of two with a computed exponent, Math.pow or a doubling assignment is a backoff of its own.
    const pattern = /\b2\s*\*\*(?!\s*\d)|Math\.pow\s*\(|\*=\s*2\b/g;
    const found = offences("backoff", pattern).filter((o) => !o.startsWith("http/retry.ts:"));
    expect(found).toEqual([]);
  });

  it("exports one backoff function, and the take loop and the pool's restarts call it", () => {
    const exported = sources().flatMap(({ path, text }) =>
      [...text.matchAll(/\bexport\s+(?:async\s+)?(?:function\s+|const\s+)(\w*[Bb]ackoff\w*)/g)].map(
        (m) => `${path}: ${m[1]}`,
      ),
    );
    expect(exported).toEqual(["http/retry.ts: backoffMs"]);
    const text = (path: string) => readFileSync(join(SRC, path), "utf8");
    expect(text("runtime/queue/worker.ts")).toMatch(/\bbackoffMs\(TAKE_ERROR_BACKOFF\b/);
    expect(text("platform/workers/pool.ts")).toMatch(/\bbackoffMs\(CRASH_BACKOFF\b/);
  });
});
