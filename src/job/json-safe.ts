// The check before a result is sent: JSON.stringify would turn some values into null or {} without a word.
/** The first value JSON cannot carry faithfully, named by its path (e.g. `output.items[3]`), or undefined. */
export function findUnsafeJson(value: unknown, path: string): string | undefined {
  const seen = new Set<object>();
  const walk = (v: unknown, at: string, inArray: boolean): string | undefined => {
    switch (typeof v) {
      case "string":
      case "boolean":
        return undefined;
      case "number":
        return Number.isFinite(v) ? undefined : `${at} is ${v}, which JSON cannot represent`;
      case "bigint":
        return `${at} is a BigInt (${v}n); convert it to a string or number`;
      case "function":
        return `${at} is a function`;
      case "symbol":
        return `${at} is a symbol`;
      case "undefined":
        return inArray ? `${at} is undefined inside an array (JSON would write null)` : undefined;
    }
    if (v === null) return undefined;
    const obj = v as object;
    if (typeof (obj as { toJSON?: unknown }).toJSON === "function") return undefined;
    if (seen.has(obj)) return `${at} is a circular reference`;
    if (obj instanceof Map || obj instanceof Set) {
      return `${at} is a ${obj instanceof Map ? "Map" : "Set"} (JSON would write {}); convert it to an object or array`;
    }
    if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer) {
      return `${at} is binary data (${obj.constructor.name}); encode it, e.g. as base64`;
    }
    seen.add(obj);
    let found: string | undefined;
    if (Array.isArray(obj)) {
      for (let i = 0; i < obj.length && !found; i++) found = walk(obj[i], `${at}[${i}]`, true);
    } else {
      for (const key of Object.keys(obj)) {
        found = walk(
          (obj as Record<string, unknown>)[key],
          /^[A-Za-z_$][\w$]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`,
          false,
        );
        if (found) break;
      }
    }
    seen.delete(obj);
    return found;
  };
  return walk(value, path, false);
}
