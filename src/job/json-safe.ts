// The check before a result is sent: JSON.stringify would turn some values into null or {} without a word.

/** What is wrong with a value, said of its path; the path is built only when something is wrong. */
type Problem = { say: (at: string) => string; keys: (string | number)[] };

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** The first value JSON cannot carry faithfully, named by its path (e.g. `output.items[3]`), or undefined. */
export function findUnsafeJson(value: unknown, path: string): string | undefined {
  let seen: Set<object> | undefined;
  const walk = (v: unknown, inArray: boolean): Problem | undefined => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return undefined;
      case "number":
        return Number.isFinite(v) ? undefined : problem((at) => `${at} is ${v}, which JSON cannot represent`);
      case "bigint":
        return problem((at) => `${at} is a BigInt (${v}n); convert it to a string or number`);
      case "function":
        return problem((at) => `${at} is a function`);
      case "symbol":
        return problem((at) => `${at} is a symbol`);
      case "undefined":
        return inArray
          ? problem((at) => `${at} is undefined inside an array (JSON would write null)`)
          : undefined;
    }
    if (v === null) return undefined;
    const obj = v as object;
    if (typeof (obj as { toJSON?: unknown }).toJSON === "function") return undefined;
    seen ??= new Set();
    if (seen.has(obj)) return problem((at) => `${at} is a circular reference`);
    if (obj instanceof Map || obj instanceof Set) {
      const kind = obj instanceof Map ? "Map" : "Set";
      return problem((at) => `${at} is a ${kind} (JSON would write {}); convert it to an object or array`);
    }
    if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer) {
      const name = obj.constructor.name;
      return problem((at) => `${at} is binary data (${name}); encode it, e.g. as base64`);
    }
    seen.add(obj);
    let found: Problem | undefined;
    if (Array.isArray(obj)) {
      for (let i = 0; i < obj.length && !found; i++) {
        found = walk(obj[i], true);
        found?.keys.push(i);
      }
    } else {
      for (const key of Object.keys(obj)) {
        found = walk((obj as Record<string, unknown>)[key], false);
        if (found) {
          found.keys.push(key);
          break;
        }
      }
    }
    seen.delete(obj);
    return found;
  };
  const found = walk(value, false);
  if (!found) return undefined;
  let at = path;
  // Collected from the value up, so read backwards.
  for (let i = found.keys.length - 1; i >= 0; i--) {
    const key = found.keys[i]!;
    at +=
      typeof key === "number" ? `[${key}]` : IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  }
  return found.say(at);
}

function problem(say: (at: string) => string): Problem {
  return { say, keys: [] };
}
