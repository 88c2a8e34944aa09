// The manifest: what the app's entry files declare (name, kind, routes, workers, timeouts), read by loading them.
import { relative } from "node:path";
import { declarationOf, type EndpointHandlerDefinition } from "../../app/endpoint.js";
import { endpointIdFor, endpointSlug, loadApp } from "../../app/load.js";
import { isOpenAICompatible } from "../../app/openai.js";
import { type OpenApiDocument, openApiDocument } from "../../app/openapi.js";
import { type App, registry } from "../../app/registry.js";
import type { CudaFlavor, NodeVersion } from "../../app/settings.js";
import { isFlashError } from "../../flash-error.js";
import { BuildError } from "./errors.js";

export const MANIFEST_NAME = "flash_manifest.json";
/** Where each endpoint's OpenAPI document is in the artifact. */
const OPENAPI_DIR = "openapi";

export interface ManifestEndpoint {
  name: string;
  /** The platform id `flash deploy` gives it: the name, lowercased, made URL-safe. */
  id: string;
  /** Entry file, relative to the project root. */
  file: string;
  kind: "queue" | "load-balanced";
  /** A queue endpoint that serves OpenAI clients at `/openai/v1` (openaiCompatible(), or a server's passthrough). */
  openai?: boolean;
  routes: { method: string; path: string }[];
  workers: [number, number];
  /** 0 = the platform's default. */
  executionTimeoutMs: number;
  /** Declared on an Endpoint; plain handler() files declare none. */
  nodeVersion?: NodeVersion;
  maxConcurrency: number;
  dependencies: string[];
  gpu?: string[];
  cpu?: string[];
  volume?: string;
  /** Seconds; the platform's default when unset. */
  idleTimeout?: number;
  flashboot?: "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";
  minCudaVersion?: string;
  /** The CUDA image flavor the Endpoint asks for; absent means base. */
  cudaFlavor?: CudaFlavor;
  env?: Record<string, string>;
  /** Its OpenAPI document's path in the artifact, `openapi/<id>.json` (docs/design.md §4.12); absent before 0.1. */
  openapi?: string;
}

export interface Manifest {
  version: "1.0";
  generatedAt: string;
  projectName: string;
  /** The Node.js major the workers run. */
  nodeVersion: NodeVersion;
  flashWorkerVersion: string;
  files: number;
  /** npm packages installed into the artifact's node_modules/ (`name@range`). */
  dependencies: string[];
  endpoints: ManifestEndpoint[];
}

export { endpointSlug };

/**
 * Loads each entry file (as `flash start` would, without starting it) and describes the endpoint it defines;
 * `documents` gets each one's OpenAPI document, by the path its manifest entry names.
 */
export async function describeEndpoints(
  root: string,
  entries: readonly string[],
  documents: Map<string, OpenApiDocument> = new Map(),
): Promise<ManifestEndpoint[]> {
  const endpoints: ManifestEndpoint[] = [];
  for (const file of entries) {
    const rel = relative(root, file).split("\\").join("/");
    registry().app = undefined;
    let app: App;
    try {
      app = await loadApp(file);
    } catch (err) {
      throw new BuildError(loadFailure(err, rel, file));
    }
    const endpoint = describe(app, rel, file);
    endpoints.push(endpoint);
    documents.set(`${OPENAPI_DIR}/${endpoint.id}.json`, await openApiDocument(app, endpoint.name));
  }
  const byId = new Map<string, ManifestEndpoint>();
  for (const endpoint of endpoints) {
    const other = byId.get(endpoint.id);
    if (other) {
      throw new BuildError(
        `Endpoints "${other.name}" (${other.file}) and "${endpoint.name}" (${endpoint.file}) have the same name; endpoint names are unique per app.`,
      );
    }
    byId.set(endpoint.id, endpoint);
  }
  return endpoints;
}

/**
 * Why an entry file did not load, in one line where it is a configuration error (a bad method or path, a
 * duplicate route, a missing package): `handler.ts:3: <message>`. Anything else keeps the user's frames.
 */
function loadFailure(err: unknown, rel: string, file: string): string {
  const cause = (err as { cause?: unknown }).cause;
  if (isFlashError(cause, "ENDPOINT_CONFIG_INVALID")) {
    const line = cause.stack?.split("\n").find((frame) => frame.includes(`${file}:`));
    const at = line ? /:(\d+):\d+\)?$/.exec(line)?.[1] : undefined;
    return `${rel}${at ? `:${at}` : ""}: ${cause.message}`;
  }
  if ((cause as { code?: unknown } | undefined)?.code === "ERR_MODULE_NOT_FOUND") {
    const message = (cause as Error).message.split("\n")[0] ?? "";
    const fix = message.startsWith("Cannot find package")
      ? "add it to package.json and npm install it"
      : "fix the import";
    return `${rel}: ${message}: ${fix}.`;
  }
  return (err as Error).message;
}

function describe(app: App, rel: string, file: string): ManifestEndpoint {
  const declaration = app.kind === "endpoint" ? declarationOf(app) : undefined;
  if (declaration && !declaration.isLoadBalanced && !declaration.queueHandler) {
    try {
      declaration.assertRoutes();
    } catch (err) {
      throw new BuildError(`${rel}: ${(err as Error).message}`);
    }
  }
  // `export default ep.handler(fn)` exports the queue handler, which carries its Endpoint's settings.
  const settings = declaration?.settings ?? (app as Partial<EndpointHandlerDefinition>).endpoint;
  const loadBalanced = declaration?.isLoadBalanced ?? false;
  const name = settings?.name ?? endpointIdFor(file);
  const concurrency = app.kind === "handler" ? app.concurrency : undefined;
  return {
    name,
    id: endpointIdFor(file, name),
    file: rel,
    kind: loadBalanced ? "load-balanced" : "queue",
    // As `flash dev` tells it (toolkit/dev/app.ts): the handler was made by openaiCompatible() or is a server's passthrough.
    ...(app.kind === "handler" && isOpenAICompatible(app.fn) ? { openai: true } : {}),
    routes: declaration?.routes.map((route) => ({ method: route.method, path: route.path })) ?? [],
    workers: settings ? [settings.workers[0], settings.workers[1]] : [0, 1],
    executionTimeoutMs: settings?.executionTimeoutMs ?? 0,
    openapi: `${OPENAPI_DIR}/${endpointIdFor(file, name)}.json`,
    nodeVersion: settings?.nodeVersion,
    maxConcurrency: settings?.maxConcurrency ?? (typeof concurrency === "number" ? concurrency : 1),
    dependencies: [...(settings?.dependencies ?? [])],
    gpu: settings?.gpu && [...settings.gpu],
    cpu: settings?.cpu && [...settings.cpu],
    volume: settings?.volume,
    // Only what the Endpoint sets: deploy leaves the rest to RunPod's defaults.
    ...(settings?.idleTimeout ? { idleTimeout: settings.idleTimeout } : {}),
    ...(settings?.flashboot ? { flashboot: settings.flashboot } : {}),
    ...(settings?.minCudaVersion ? { minCudaVersion: settings.minCudaVersion } : {}),
    cudaFlavor: settings?.cudaFlavor,
    ...(settings?.env ? { env: { ...settings.env } } : {}),
  };
}
