// What `flash dev` needs to know about the app before it starts workers: routes or a queue handler, and
// the settings an Endpoint carries (workers, execution timeout).
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { declarationOf } from "../../app/endpoint.js";
import { loadApp } from "../../app/load.js";
import { serverOf } from "../../app/model-server/handler.js";
import { isOpenAICompatible } from "../../app/openai.js";
import { openApiDocument } from "../../app/openapi.js";
import type { App } from "../../app/registry.js";
import { sampleRoute } from "../../app/sample.js";
import { submitCheckOf } from "../../job/validate.js";
import { shellQuote } from "../../platform/index.js";
import { openaiBaseUrl } from "../deploy/mapping.js";

export interface DevApp {
  /** The app declares HTTP routes: its workers serve them behind `/lb/<id>/`. */
  loadBalanced: boolean;
  /** The Endpoint's `name`, which names it in dev as in deploy; undefined for a plain handler(). */
  name?: string;
  /** The routes it declares, for the curl line `flash dev` suggests. */
  routes: { method: string; path: string }[];
  /** A queue handler made by openaiCompatible(): clients reach it at `/v2/<id>/openai/v1`. */
  openaiCompatible?: boolean;
  /** From an Endpoint's settings; undefined for a plain handler(). */
  workers?: [number, number];
  executionTimeoutMs?: number;
  /** A declared model server's start timeout, with room for the worker's own start: how long its workers may take. */
  startLimitMs?: number;
  /** A declared model server's command: the files it names restart the workers when edited. */
  server?: { command: string; args?: readonly string[] };
  /** The app's OpenAPI document as JSON (docs/design.md §4.12). */
  openapi?: string;
  /** The queue handler's input check at submit, when it declared `validateAtSubmit`. */
  checkInput?: (input: unknown) => Promise<string | undefined>;
}

/** What a worker does besides waiting for its model server (import, fitness checks) before it is ready. */
const START_SLACK_MS = 60_000;

interface DevSettings {
  name?: string;
  workers: readonly [number, number];
  executionTimeoutMs: number;
}

function settingsOf(app: App): DevSettings | undefined {
  if (app.kind === "endpoint") return declarationOf(app).settings;
  return (app as { endpoint?: DevSettings }).endpoint;
}

/**
 * Loads the handler file in this process (no hooks run) to see what kind of app it is; throws the toolkit's
 * EndpointConfigError for an Endpoint that declares nothing to serve.
 */
export async function describeApp(file: string): Promise<DevApp> {
  let app: App;
  try {
    app = await loadApp(file);
  } catch {
    // The workers will load it too and report the error where the user looks.
    return { loadBalanced: false, routes: [] };
  }
  // An Endpoint with neither routes nor a queue handler has nothing to serve: refused now, not when a job comes.
  const declaration = app.kind === "endpoint" ? declarationOf(app) : undefined;
  if (declaration && !declaration.isLoadBalanced && !declaration.queueHandler) declaration.assertRoutes();
  const settings = settingsOf(app);
  const model = serverOf(app);
  return {
    loadBalanced: declaration?.isLoadBalanced ?? false,
    name: settings?.name,
    routes: declaration ? declaration.routes.map(({ method, path }) => ({ method, path })) : [],
    openaiCompatible: app.kind === "handler" && isOpenAICompatible(app.fn),
    workers: settings ? [settings.workers[0], Math.max(1, settings.workers[1])] : undefined,
    executionTimeoutMs: settings && settings.executionTimeoutMs > 0 ? settings.executionTimeoutMs : undefined,
    startLimitMs: model ? model.settings.startTimeoutMs + START_SLACK_MS : undefined,
    server: model ? { command: model.settings.command, args: model.settings.args } : undefined,
    openapi: JSON.stringify(await openApiDocument(app, settings?.name ?? basename(file))),
    checkInput: submitCheckOf((app.kind === "handler" ? app : declaration?.queueHandler)?.fn),
  };
}

/**
 * A curl call through the proxy: the first request in test_input.json beside the handler, else one of
 * the app's routes.
 */
export function lbCurlCommand(
  baseUrl: string,
  endpointId: string,
  apiKey: string,
  file: string,
  routes: DevApp["routes"] = [],
): string {
  let request = sampleRoute(routes) ?? { method: "GET", path: "/" };
  const sample = join(dirname(file), "test_input.json");
  if (existsSync(sample)) {
    try {
      const parsed = JSON.parse(readFileSync(sample, "utf8")) as { requests?: unknown[] };
      const first = (Array.isArray(parsed.requests) ? parsed.requests[0] : parsed) as
        | { method?: string; path?: string; body?: unknown }
        | undefined;
      if (typeof first?.path === "string") {
        request = { method: (first.method ?? "GET").toUpperCase(), path: first.path, body: first.body };
      }
    } catch {
      // A broken sample is the user's to fix; the curl line falls back to a route.
    }
  }
  const parts = [
    `curl -s -X ${request.method} ${baseUrl}/lb/${endpointId}${request.path}`,
    `-H ${shellQuote(`Authorization: Bearer ${apiKey}`)}`,
  ];
  if (request.body !== undefined)
    parts.push(`-H 'Content-Type: application/json'`, `-d ${shellQuote(JSON.stringify(request.body))}`);
  return parts.join(" ");
}

/**
 * A curl call of a chat-completion worker's `/chat/completions`: the body of test_input.json's chat request
 * beside the handler, or one user message.
 */
export function chatCurlCommand(baseUrl: string, endpointId: string, apiKey: string, file: string): string {
  let body: unknown = { messages: [{ role: "user", content: "Hello!" }] };
  const sample = join(dirname(file), "test_input.json");
  if (existsSync(sample)) {
    try {
      const input = (JSON.parse(readFileSync(sample, "utf8")) as { input?: Record<string, unknown> }).input;
      if (
        typeof input?.openai_route === "string" &&
        /chat\/completions\/?$/.test(input.openai_route) &&
        typeof input.openai_input === "object"
      )
        body = input.openai_input;
    } catch {
      // A broken sample is the user's to fix; the curl line falls back to one user message.
    }
  }
  return [
    `curl -s -X POST ${openaiBaseUrl(`${baseUrl}/v2/${endpointId}`)}/chat/completions`,
    `-H ${shellQuote(`Authorization: Bearer ${apiKey}`)}`,
    `-H 'Content-Type: application/json'`,
    `-d ${shellQuote(JSON.stringify(body))}`,
  ].join(" ");
}
