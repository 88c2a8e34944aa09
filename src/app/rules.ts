// Route rules of a load-balanced endpoint (interface document "Route rules"; messages of docs/toolkit.md §4.1).
import { EndpointConfigError } from "./settings.js";

export const HTTP_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Served by the runtime itself (`/ping`) or kept for the toolkit's live path (`/execute`). */
export const RESERVED_PATHS = ["/execute", "/ping"] as const;

export const NO_ROUTES_MESSAGE = "Load-balanced endpoints require route decorators";

/** The method upper-cased, or the toolkit's error. */
export function checkMethod(method: unknown): HttpMethod {
  const upper = typeof method === "string" ? method.toUpperCase() : String(method);
  const found = HTTP_METHODS.find((m) => m === upper);
  if (!found) {
    throw new EndpointConfigError(`method must be one of ${HTTP_METHODS.join(", ")}, got: ${upper}`);
  }
  return found;
}

/** The path as fastify takes it: `{name}` segments (the toolkit's spelling) become `:name`. */
export function checkPath(path: unknown): string {
  if (typeof path !== "string" || !path.startsWith("/")) {
    throw new EndpointConfigError(`path must start with '/', got: ${String(path)}`);
  }
  const normalised = path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, ":$1");
  const bare = normalised.length > 1 ? normalised.replace(/\/+$/, "") : normalised;
  if ((RESERVED_PATHS as readonly string[]).includes(bare)) {
    throw new EndpointConfigError(
      `path '${path}' is reserved by the framework. reserved paths: ${RESERVED_PATHS.join(", ")}`,
    );
  }
  return normalised;
}

/** Two paths that differ only in parameter names match the same requests: one key for both. */
export function routeKey(method: HttpMethod, path: string): string {
  return `${method} ${path.replace(/:[^/]+/g, ":")}`;
}

/** A regular expression that matches the request paths a route path (fastify's syntax) takes. */
export function pathMatcher(path: string): RegExp {
  const source = path
    .split(/(:[A-Za-z_][A-Za-z0-9_]*(?:\([^)]*\))?|\*)/)
    .map((part) => {
      if (part === "*") return ".*";
      if (part.startsWith(":")) {
        const own = /\((.*)\)$/.exec(part)?.[1];
        return own ? `(?:${own.replace(/^\^|\$$/g, "")})` : "[^/]+";
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("");
  return new RegExp(`^${source}$`);
}

/** The toolkit's timeout message (interface document "Errors"): seconds as Python prints them. */
export function timeoutMessage(endpoint: string, ms: number): string {
  const seconds = ms / 1000;
  return `Execution timeout on ${endpoint} after ${Number.isInteger(seconds) ? seconds.toFixed(1) : seconds}s`;
}
