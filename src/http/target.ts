// A request URL split into its origin, parsed once per origin and kept, and its path: the origin cache, a
// micro-optimisation alone in its module. What it buys: 4–5 % of a no-op queue job's main-thread CPU against
// parsing every URL with `new URL()` (npm run bench:ab, this ÷ a copy doing so: 0.958 and 0.953;
// docs/benchmarks-history.md, "Oddities, measured"). node:http (wire.ts) and h1.ts both take their targets from here.
import type { LookupFunction } from "node:net";

/** `*.localhost` names are loopback (RFC 6761), as browsers resolve them: the local platform's Pod proxy hosts. */
const loopbackLookup: LookupFunction = (_hostname, options, callback) => {
  if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
};

/** The lookup for a URL's host: loopback for `*.localhost`, the system's otherwise. */
export function lookupFor(url: string): LookupFunction | undefined {
  return /^[a-z]+:\/\/[^/]*\.localhost(?::\d+)?(?:\/|$)/i.test(url) ? loopbackLookup : undefined;
}

/** A URL's origin as node:http takes it, parsed once per origin: `http.request(url)` parses the whole URL each time. */
export interface Origin {
  secure: boolean;
  protocol: string;
  hostname: string;
  port?: number;
  lookup: LookupFunction | undefined;
}

const origins = new Map<string, Origin>();
const MAX_ORIGINS = 64;

/** A path and query the URL parser would keep as they are: no fragment, dot segment, space, quote or non-ASCII. */
const PLAIN_PATH = /^\/[\w\-.~%!$&()*+,;=:@/?]*$/;
const DOT_SEGMENT = /\/\.|%2e/i;

/** `url` split into its parsed origin and its path, or undefined when only the URL parser may read it. */
export function targetOf(url: string): { origin: Origin; path: string } | undefined {
  const scheme = url.indexOf("://");
  if (scheme < 0) return undefined;
  const slash = url.indexOf("/", scheme + 3);
  if (slash < 0) return undefined;
  const path = url.slice(slash);
  if (!PLAIN_PATH.test(path) || DOT_SEGMENT.test(path)) return undefined;
  const prefix = url.slice(0, slash);
  let origin = origins.get(prefix);
  if (origin === undefined) {
    // Userinfo, a query or a backslash in the origin: the full parser's (and its errors') business.
    if (/[@?#\\\s]/.test(prefix)) return undefined;
    let parsed: URL;
    try {
      parsed = new URL(prefix);
    } catch {
      return undefined;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
    const { hostname } = parsed;
    origin = {
      secure: parsed.protocol === "https:",
      protocol: parsed.protocol,
      hostname: hostname.startsWith("[") ? hostname.slice(1, -1) : hostname,
      lookup: lookupFor(url),
    };
    if (parsed.port) origin.port = Number(parsed.port);
    if (origins.size >= MAX_ORIGINS) origins.clear();
    origins.set(prefix, origin);
  }
  return { origin, path };
}
