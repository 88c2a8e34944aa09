// A registered function's parameter names, read from its source, so a call missing arguments gets
// Python's TypeError text: "add() missing 1 required positional argument: 'b'".

/** Parameter names in order (undefined for a destructured one); the rest parameter, if any, is left out. */
export function parameterNames(
  fn: ((...args: never[]) => unknown) | (abstract new (...args: never[]) => unknown),
): (string | undefined)[] | undefined {
  const source = Function.prototype.toString.call(fn);
  let open: number;
  if (/^class\b/.test(source)) {
    const m = /\bconstructor\s*\(/.exec(source);
    if (m === null) return [];
    open = m.index + m[0].length - 1;
  } else {
    const bare = /^(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(source);
    if (bare !== null) return [bare[1]];
    open = source.indexOf("(");
    if (open < 0) return undefined;
  }
  const list = paramList(source, open);
  if (list === undefined) return undefined;
  const names: (string | undefined)[] = [];
  for (const raw of splitTopLevel(list)) {
    const p = raw.trim();
    if (p === "" || p.startsWith("...")) break;
    names.push(/^[A-Za-z_$][\w$]*/.exec(p)?.[0]);
  }
  return names;
}

/** The text between the parenthesis at `open` and its match, skipping strings, comments and nesting. */
function paramList(source: string, open: number): string | undefined {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    const c = source[i];
    if (c === '"' || c === "'" || c === "`") {
      for (i++; i < source.length && source[i] !== c; i++) if (source[i] === "\\") i++;
    } else if (c === "/" && source[i + 1] === "*") {
      i = source.indexOf("*/", i + 2);
      if (i < 0) return undefined;
      i++;
    } else if (c === "/" && source[i + 1] === "/") {
      i = source.indexOf("\n", i);
      if (i < 0) return undefined;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") {
      depth--;
      if (depth === 0) return source.slice(open + 1, i);
    }
  }
  return undefined;
}

/** Splits at commas outside brackets and strings (default values may hold both). */
function splitTopLevel(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (c === '"' || c === "'" || c === "`") {
      for (i++; i < list.length && list[i] !== c; i++) if (list[i] === "\\") i++;
    } else if (c === "(" || c === "[" || c === "{") depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    else if (c === "," && depth === 0) {
      parts.push(list.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(list.slice(start));
  return parts;
}

/** Python's words for required arguments a call left out: 'a', 'a' and 'b', 'a', 'b', and 'c'. */
export function missingArgumentsMessage(callee: string, missing: readonly string[]): string {
  const quoted = missing.map((m) => `'${m}'`);
  const list =
    quoted.length === 1
      ? quoted[0]
      : quoted.length === 2
        ? `${quoted[0]} and ${quoted[1]}`
        : `${quoted.slice(0, -1).join(", ")}, and ${quoted.at(-1)}`;
  const s = missing.length === 1 ? "" : "s";
  return `${callee}() missing ${missing.length} required positional argument${s}: ${list}`;
}
