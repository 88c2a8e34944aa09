// One rule names an endpoint in `flash dev` and in `flash deploy`: its Endpoint's name, else its file.
import { basename, dirname, extname } from "node:path";

/** Lowercase letters, digits, `-` and `_`, at most 64: what endpoint ids may be. */
export function endpointSlug(name: string): string {
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+|[-_]+$/g, "");
  return slug.slice(0, 64) || "endpoint";
}

/**
 * The endpoint id: the Endpoint's `name` made URL-safe, else the handler's file name, or its folder's for
 * `handler`/`index`/`main`/`worker` files (examples/echo/handler.ts → "echo").
 */
export function endpointIdFor(file: string, name?: string): string {
  if (name) return endpointSlug(name);
  const stem = basename(file, extname(file));
  return endpointSlug(["handler", "index", "main", "worker"].includes(stem) ? basename(dirname(file)) : stem);
}
