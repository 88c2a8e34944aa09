// Models RunPod caches on the worker's volume, found as Hugging Face's cache lays them out (model-caching).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { FlashError } from "../../flash-error.js";
import { readFilesConfig } from "../config/options.js";

/** A cached model that is not there, or a model id that cannot name one. */
export class CachedModelError extends FlashError {
  readonly code = "MODEL_NOT_CACHED";
  override name = "CachedModelError";
}

export interface CachedModelOptions {
  /** A branch or tag under `refs/` (default `main`), or a snapshot's commit hash. */
  revision?: string;
}

/** Where the network volume (and the model cache) is mounted: `/runpod-volume`, or FLASH_VOLUME_PATH. */
export function volumePath(): string {
  return readFilesConfig().volumePath;
}

/** The Hugging Face hub cache RunPod fills: `<volume>/huggingface-cache/hub`. */
export function modelCachePath(): string {
  return join(volumePath(), "huggingface-cache", "hub");
}

const isDir = (path: string): boolean => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

const readRef = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
};

/**
 * The local folder of a model RunPod caches for the endpoint (`org/name`, as on Hugging Face):
 * `<volume>/huggingface-cache/hub/models--{org}--{name}/snapshots/{hash}/`, the hash read from
 * `refs/main` (or `revision`), else the first snapshot there. Throws CachedModelError when it is absent.
 */
export function cachedModelPath(modelId: string, options: CachedModelOptions = {}): string {
  const parts = typeof modelId === "string" ? modelId.split("/") : [];
  if (parts.length !== 2 || parts.some((part) => part.trim() === "" || part === "." || part === "..")) {
    throw new CachedModelError(
      `Invalid model id ${JSON.stringify(modelId)}: expected "org/name" as on Hugging Face, e.g. "Qwen/Qwen2.5-0.5B-Instruct"`,
    );
  }
  const hub = modelCachePath();
  const folder = `models--${parts[0]}--${parts[1]}`;
  const snapshots = join(hub, folder, "snapshots");
  const revision = options.revision ?? "main";
  const hash = readRef(join(hub, folder, "refs", revision)) ?? revision;
  const named = join(snapshots, hash);
  if (!hash.includes("/") && isDir(named)) return `${named}/`;
  // runpod's own helper falls back to the first snapshot when refs/main does not name one.
  if (options.revision === undefined && isDir(snapshots)) {
    const first = readdirSync(snapshots)
      .filter((name) => isDir(join(snapshots, name)))
      .sort()[0];
    if (first) return `${join(snapshots, first)}/`;
  }
  const what = options.revision === undefined ? "" : ` at revision "${options.revision}"`;
  throw new CachedModelError(
    `Cached model "${modelId}"${what} not found: no ${join(snapshots, options.revision === undefined ? "<hash>" : hash)}/. ` +
      `Select it as the endpoint's cached model (the Model field; serverless/endpoints/model-caching), ` +
      `or point FLASH_VOLUME_PATH at a folder holding huggingface-cache/hub/${folder}.`,
  );
}
