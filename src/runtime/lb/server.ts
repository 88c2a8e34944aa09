// The HTTP server of a load-balanced endpoint: /ping, the routes, their arguments, answers and timeouts.
import { createServer } from "node:http";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import type { Endpoint, RouteArgs, RouteDefinition, RouteFn, RouteRequest } from "../../app/endpoint.js";
import type { ModelServer } from "../../app/model-server/declare.js";
import { pathMatcher, timeoutMessage } from "../../app/rules.js";
import { gpuSummary } from "../../gpu/facts.js";
import { drainRequest } from "../../http/drain.js";
import { PROMETHEUS_CONTENT_TYPE } from "../../http/prometheus.js";
import type { Logger } from "../../log/index.js";
import { tracing } from "../../trace/index.js";
import { proxyFirst, type RawHandler } from "../model-server/proxy.js";
import { claimsPath, METRICS_PATH, RouteMetrics } from "./metrics.js";

/** cog's explicit states: `/ping` answers 204 while STARTING, 200 when READY (docs/toolkit.md §4.2). */
export type EndpointState = "STARTING" | "READY" | "SETUP_FAILED" | "STOPPING";

/** Bodies up to what RunPod's load balancer lets through: 30 MB (serverless/load-balancing/overview, docs/toolkit.md §4.5). */
export const BODY_LIMIT_BYTES = 30 * 1024 * 1024;

export interface RouteServerOptions {
  log: Logger;
  /** A model server: requests no route declares are proxied to it. */
  server?: ModelServer;
  /** Runs before the onStart hooks (the model server's health wait); a throw fails the start. */
  ready?: () => Promise<void>;
}

export interface RouteServer {
  readonly app: FastifyInstance;
  readonly state: EndpointState;
  /** Requests being answered by route functions right now. */
  readonly inFlight: number;
  /** Runs the endpoint's onStart hooks; true when it is READY, false when one failed. */
  start(): Promise<boolean>;
  /** Stops taking requests and waits for in-flight ones up to `graceMs`, then aborts and closes the rest. */
  close(graceMs: number): Promise<void>;
  /** Ends a close's grace period now. */
  endGrace(): void;
}

type Settle = { value: unknown } | { timedOut: true };

/** Per-request context, built cheaply: the AbortSignal exists only if a route asks for it. */
class Context implements RouteRequest {
  private controller: AbortController | undefined;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    readonly path: string,
    readonly log: Logger,
    /** Contexts whose route took the signal: the ones a shutdown can abort. */
    private readonly watched: Set<Context>,
  ) {}

  get method(): string {
    return this.request.method;
  }
  get url(): string {
    return this.request.url;
  }
  get params(): Readonly<Record<string, string>> {
    return this.request.params as Record<string, string>;
  }
  get query(): Readonly<Record<string, string | string[]>> {
    return this.request.query as Record<string, string | string[]>;
  }
  get body(): unknown {
    return this.request.body;
  }
  get headers() {
    return this.request.headers;
  }
  get signal(): AbortSignal {
    if (!this.controller) {
      const controller = new AbortController();
      this.controller = controller;
      this.watched.add(this);
      const res = this.reply.raw;
      res.once("close", () => {
        if (!res.writableFinished) controller.abort(new Error("client closed the connection"));
      });
    }
    return this.controller.signal;
  }

  abort(reason: Error): void {
    // A route that never looked at its signal has nothing to abort.
    this.controller?.abort(reason);
  }

  done(): void {
    if (this.controller) this.watched.delete(this);
  }
}

/** A form body as an object: a file part is a Uint8Array (the toolkit's `bytes`), a text part a string; a name sent twice, a list. */
async function formFields(type: string, body: Buffer): Promise<Record<string, unknown>> {
  const form = await new Response(body, { headers: { "content-type": type } }).formData();
  const fields: Record<string, unknown> = Object.create(null);
  for (const [name, part] of form) {
    const value = typeof part === "string" ? part : new Uint8Array(await part.arrayBuffer());
    const before = fields[name];
    fields[name] =
      before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value];
  }
  return { ...fields };
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && !Buffer.isBuffer(value);

/** docs/toolkit.md §4.3: the body object's keys are the arguments; path parameters join them. */
function routeArgs(request: FastifyRequest, withParams: boolean): unknown {
  const { body } = request;
  const params = request.params as RouteArgs;
  if (body === undefined || request.method === "GET") {
    const query = request.query as RouteArgs;
    return withParams ? { ...query, ...params } : query;
  }
  if (!withParams || !isPlainObject(body)) return body;
  return { ...body, ...params };
}

/** The fastify app of a load-balanced endpoint: `/ping` and the endpoint's routes. */
export function createRouteServer(endpoint: Endpoint, options: RouteServerOptions): RouteServer {
  const { log } = options;
  const name = endpoint.name ?? "endpoint";
  const timeoutMs = endpoint.executionTimeoutMs;
  const watched = new Set<Context>();
  let inFlight = 0;
  let state: EndpointState = "STARTING";
  let endGrace = () => {};
  // A function, so the check is made after the route's await (TypeScript would narrow a direct compare).
  const stopping = () => state === "STOPPING";

  // Declared routes and /ping, as fastify matches them (a GET route answers HEAD too): the rest goes to the model server.
  const declared = [
    ...endpoint.routes.map((route) => ({ method: route.method as string, test: pathMatcher(route.path) })),
    { method: "GET", test: /^\/ping$/ },
  ];
  const isDeclared = (method: string, path: string) =>
    declared.some(
      (d) => (d.method === method || (method === "HEAD" && d.method === "GET")) && d.test.test(path),
    );
  const model = options.server;
  const app = Fastify({
    ...(model
      ? {
          serverFactory: (next: RawHandler) =>
            createServer(
              proxyFirst(
                model,
                {
                  log,
                  endpoint: name,
                  ready: () => state === "READY",
                  declared: isDeclared,
                  timeout: {
                    ms: endpoint.executionTimeoutMs,
                    message: timeoutMessage(name, endpoint.executionTimeoutMs),
                  },
                },
                next,
              ),
            ),
        }
      : {}),
    logger: false,
    bodyLimit: BODY_LIMIT_BYTES,
    // Keep-alive connections that sit idle are closed on shutdown; busy ones finish their request first.
    forceCloseConnections: "idle",
    return503OnClosing: true,
  });

  // The default parser (with prototype-poisoning checks), but an empty JSON body is no body.
  const parseJson = app.getDefaultJsonParser("error", "ignore");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.length === 0 || /^\s*$/.test(text)) return done(null, undefined);
    parseJson(request, text, done);
  });

  // Forms, as the toolkit's routes take `bytes` parameters: file parts become bytes, the other parts strings.
  app.addContentTypeParser(
    ["multipart/form-data", "application/x-www-form-urlencoded"],
    { parseAs: "buffer" },
    (request, body, done) => {
      formFields(request.headers["content-type"] ?? "", body as Buffer).then(
        (fields) => done(null, fields),
        (err: Error) =>
          done(Object.assign(new Error(`Malformed form body: ${err.message}`), { statusCode: 400 })),
      );
    },
  );

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = errorStatus(err);
    if (err.code === "FST_ERR_CTP_INVALID_JSON_BODY" || err instanceof SyntaxError) {
      return reply.code(400).send({ error: `Malformed JSON body: ${err.message}` });
    }
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      const type = request.headers["content-type"] ?? "none";
      return reply.code(415).send({
        error: `Unsupported content type ${type}: send JSON (content-type: application/json) or a form (multipart/form-data)`,
      });
    }
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      const limitMb = (request.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES) / (1024 * 1024);
      return drainRequest(request.raw).then(() =>
        reply.code(413).send({ error: `Request body is larger than the ${limitMb} MB limit` }),
      );
    }
    if (status >= 500) log.error(`${request.method} ${request.url} failed: ${err.stack ?? err.message}`);
    return reply.code(status).send({ error: err.message });
  });
  // The path is declared for other methods: 405 with the ones it takes (RFC 9110 §15.5.6), not a 404.
  const matchers = endpoint.routes.map((route) => ({ method: route.method, test: pathMatcher(route.path) }));
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "/";
    const allowed = [...new Set(matchers.filter((m) => m.test.test(path)).map((m) => m.method))];
    if (allowed.length > 0) {
      return reply
        .code(405)
        .header("allow", allowed.join(", "))
        .send({
          error: `Method ${request.method} not allowed on ${path} of endpoint '${name}': it takes ${allowed.join(", ")}`,
        });
    }
    return reply.code(404).send({ error: `No route ${request.method} ${path} on endpoint '${name}'` });
  });

  app.get("/ping", async (_request, reply) => {
    if (state === "READY") {
      // The GPUs this worker runs on, where it has any: what people check first on a GPU endpoint.
      const gpu = gpuSummary();
      return gpu ? { status: "healthy", gpu } : { status: "healthy" };
    }
    if (state === "STARTING") return reply.code(204).send();
    return reply.code(503).send({ status: "unhealthy", state });
  });

  for (const route of endpoint.routes) {
    const handler = routeHandler(route);
    const traced = tracing;
    // Tracing on: each request runs in its span (continuing an incoming traceparent); off, the handler is bare.
    const attributes = { "http.request.method": route.method, "http.route": route.path };
    app.route({
      method: route.method,
      url: route.path,
      handler: traced
        ? (request, reply) =>
            traced.request(`${route.method} ${route.path}`, attributes, request.headers, reply.raw, () =>
              handler(request, reply),
            )
        : handler,
    });
  }

  // Every answer counted, /ping's and refusals' too; /metrics itself only where no user route claims the path.
  const metrics = new RouteMetrics();
  app.addHook("onResponse", (request, reply, done) => {
    metrics.observe(
      request.method,
      request.routeOptions.url ?? "",
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  if (endpoint.routes.some((route) => claimsPath(route.path, METRICS_PATH))) {
    log.debug(`${METRICS_PATH} is a route of this endpoint: the worker's metrics are not served`);
  } else {
    app.get(METRICS_PATH, (_request, reply) =>
      reply.type(PROMETHEUS_CONTENT_TYPE).send(metrics.text(inFlight)),
    );
  }

  if (log.level === "DEBUG" || log.level === "TRACE") {
    app.addHook("onResponse", async (request, reply) => {
      log.debug(`${request.method} ${request.url} ${reply.statusCode} ${Math.round(reply.elapsedTime)} ms`);
    });
  }

  function finish(context: Context): void {
    inFlight--;
    context.done();
  }

  function answer(reply: FastifyReply, context: Context, value: unknown): unknown {
    finish(context);
    // Shutting down: the client's keep-alive connection ends with this answer.
    if (stopping()) reply.header("connection", "close");
    return send(reply, value);
  }

  /** Synchronous where the route is: a plain return value costs no promise. */
  function routeHandler(route: RouteDefinition) {
    const fn = route.fn as RouteFn<unknown, unknown>;
    // Known from the path once, not looked up per request.
    const withParams = /[:*]/.test(route.path);
    return (request: FastifyRequest, reply: FastifyReply): unknown => {
      if (state !== "READY") {
        reply.header("retry-after", "1");
        return reply.code(503).send({ error: `Endpoint '${name}' is ${state.toLowerCase()}` });
      }
      const context = new Context(request, reply, route.path, log, watched);
      inFlight++;
      let result: unknown;
      try {
        result = fn(routeArgs(request, withParams), context);
      } catch (err) {
        finish(context);
        throw err;
      }
      const failed = (err: unknown) => {
        finish(context);
        throw err;
      };
      if (timeoutMs > 0) {
        return withTimeout(result, timeoutMs).then((settled) => {
          if (!("timedOut" in settled)) return answer(reply, context, settled.value);
          const message = timeoutMessage(name, timeoutMs);
          context.abort(new Error(message));
          finish(context);
          log.warn(`${request.method} ${request.url} answered 504: ${message}`);
          return reply.code(504).send({ error: message });
        }, failed);
      }
      if (isThenable(result)) return result.then((value) => answer(reply, context, value), failed);
      return answer(reply, context, result);
    };
  }

  return {
    app,
    get state() {
      return state;
    },
    get inFlight() {
      return inFlight;
    },
    async start() {
      try {
        await options.ready?.();
        for (const hook of endpoint.startHooks) await hook();
      } catch (err) {
        state = "SETUP_FAILED";
        log.error(`onStart failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
        return false;
      }
      if (state === "STARTING") state = "READY";
      return state === "READY";
    },
    async close(graceMs) {
      if (state !== "SETUP_FAILED") state = "STOPPING";
      const closed = app.close();
      // Connections that go idle after close() began (their last answer sent) are closed as they appear.
      const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
      void closed.finally(() => clearInterval(sweep));
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<"grace-over">((resolve) => {
        timer = setTimeout(() => resolve("grace-over"), graceMs);
        endGrace = () => resolve("grace-over");
      });
      const outcome = await Promise.race([closed.then(() => "closed" as const), graceOver]);
      clearTimeout(timer);
      if (outcome === "grace-over") {
        if (inFlight > 0) {
          log.warn(`Grace period over with ${inFlight} request(s) still running; closing their connections`);
        }
        for (const context of watched) context.abort(new Error("the worker is shutting down"));
        app.server.closeAllConnections();
        await closed;
      }
    },
    endGrace() {
      endGrace();
    },
  };
}

function errorStatus(err: { statusCode?: unknown }): number {
  const status = err.statusCode;
  return typeof status === "number" && Number.isInteger(status) && status >= 400 && status <= 599
    ? status
    : 500;
}

/** JSON for every value (a bare string too, as FastAPI does); Response and bytes pass through untouched. */
function send(reply: FastifyReply, value: unknown): unknown {
  if (value === undefined || value === null)
    return reply.type("application/json; charset=utf-8").send("null");
  if (typeof value === "string") {
    return reply.type("application/json; charset=utf-8").send(JSON.stringify(value));
  }
  if (value instanceof Response || value instanceof Uint8Array) return reply.send(value);
  return value;
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as { then?: unknown } | null)?.then === "function";

/** The route's answer, or a timeout marker once `ms` passes; a late answer is dropped. */
function withTimeout(work: unknown, ms: number): Promise<Settle> {
  return new Promise<Settle>((resolve, reject) => {
    const timer = setTimeout(() => resolve({ timedOut: true }), ms);
    Promise.resolve(work).then(
      (value) => {
        clearTimeout(timer);
        resolve({ value });
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}
