// The console playground's first request for an endpoint, from the test_input.json beside its handler.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** The route a first try should call: a GET without parameters if there is one, else the first route. */
export function sampleRoute(
  routes: readonly { method: string; path: string }[],
): { method: string; path: string; body?: unknown } | undefined {
  const plainGet = routes.find((r) => r.method === "GET" && !/[:{]/.test(r.path));
  const route = plainGet ?? routes[0];
  if (!route) return undefined;
  // A path parameter gets its own name as a value: `/hello/:name` → `/hello/name`.
  const path = route.path.replace(
    /:(\w+)|\{(\w+)\}/g,
    (_m, a: string | undefined, b: string | undefined) => a ?? b ?? "",
  );
  return route.method === "GET" || route.method === "DELETE"
    ? { method: route.method, path }
    : { method: route.method, path, body: {} };
}

/**
 * test_input.json beside the handler, for the playground's first request: a job body (an object with "input"),
 * pretty-printed; or, for a load-balanced app, its first request (`requests[0]`, or the file itself) as
 * `{"method", "path", "body"}`, the query joined to the path.
 */
export function playgroundSample(file: string): string | undefined {
  try {
    const parsed = JSON.parse(readFileSync(join(dirname(file), "test_input.json"), "utf8")) as unknown;
    if (typeof parsed !== "object" || parsed === null) return undefined;
    if ("input" in parsed) return JSON.stringify(parsed, null, 2);
    const requests = (parsed as { requests?: unknown }).requests;
    const first = (Array.isArray(requests) ? requests[0] : parsed) as
      | { method?: unknown; path?: unknown; query?: unknown; body?: unknown }
      | undefined;
    if (typeof first?.path !== "string") return undefined;
    const query =
      typeof first.query === "object" && first.query !== null
        ? new URLSearchParams(first.query as Record<string, string>).toString()
        : "";
    return JSON.stringify({
      method: typeof first.method === "string" ? first.method.toUpperCase() : "GET",
      path: query ? `${first.path}?${query}` : first.path,
      body: first.body,
    });
  } catch {
    // None, or not JSON: the playground starts from its default body.
  }
  return undefined;
}
