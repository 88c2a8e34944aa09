// The page's static files: built by `npm run build` into dist/platform/console/page, read once, served as they are.
import { existsSync, readFileSync } from "node:fs";
import { dirname, extname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));

/** Beside this module when it runs from dist; the built copy when it runs from src (tests, tsx). */
export function pageDirectory(): string {
  const beside = resolve(HERE, "page");
  if (existsSync(resolve(beside, "main.js"))) return beside;
  return resolve(HERE, "../../..", "dist/platform/console/page");
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Only flat names of the page's own kinds: no paths, no source maps or declarations. */
const ASSET_NAME = /^[a-z][a-z0-9-]*\.(js|css|html)$/;

export interface Asset {
  body: Buffer;
  type: string;
}

export class PageAssets {
  private readonly cache = new Map<string, Asset>();

  constructor(readonly directory = pageDirectory()) {}

  get built(): boolean {
    return (
      existsSync(resolve(this.directory, "index.html")) && existsSync(resolve(this.directory, "main.js"))
    );
  }

  /** The file, or undefined for a name that is not one of the page's files. */
  get(name: string): Asset | undefined {
    if (!ASSET_NAME.test(name)) return undefined;
    const cached = this.cache.get(name);
    if (cached) return cached;
    const path = resolve(this.directory, name);
    if (!existsSync(path)) return undefined;
    const asset = { body: readFileSync(path), type: TYPES[extname(name)] ?? "application/octet-stream" };
    this.cache.set(name, asset);
    return asset;
  }
}
