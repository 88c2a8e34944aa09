// The HTTP server of a load-balanced endpoint: /ping, the routes, their arguments, answers and timeouts.
import { createServer } from "node:http";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import { declarationOf, type Endpoint, type RouteDefinition, type RouteFn } from "../../app/endpoint.js";
import type { ModelServer } from "../../app/model-server/declare.js";
import { OPENAPI_PATH, openApiDocument } from "../../app/openapi.js";
import { pathMatcher, timeoutMessage } from "../../app/rules.js";
import { gpuSummary } from "../../gpu/facts.js";
import { drainRequest } from "../../http/drain.js";
import { PROMETHEUS_CONTENT_TYPE } from "../../http/prometheus.js";
import type { Logger } from "../../log/index.js";
import { tracing } from "../../trace/index.js";
import { proxyFirst, type RawHandler } from "../model-server/proxy.js";
import { claimsPath, METRICS_PATH, RouteMetrics } from "./metrics.js";
import { addBodyParsers, Context, RouteAbortedError, routeArgs } from "./request.js";

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

type Settle = { value: unknown } | { timedOut: true };

/**
 * A load-balanced endpoint's HTTP server: `/ping` and the endpoint's routes on one fastify app, its state
 * (STARTING → READY, SETUP_FAILED or STOPPING), the requests in flight and the graceful close.
 */
export class RouteServer {
  readonly app: FastifyInstance;
  private current: EndpointState = "STARTING";
  private running = 0;
  /** Requests whose route took its signal: the ones a shutdown can abort. */
  private readonly watched = new Set<Context>();
  /** The replies routes are still computing: what a stray error answers 500. */
  private readonly open = new Map<Context, FastifyReply>();
  private graceOver = () => {};
  private readonly log: Logger;
  private readonly name: string;

  constructor(
    private readonly endpoint: Endpoint,
    private readonly options: RouteServerOptions,
  ) {
    this.log = options.log;
    this.name = endpoint.name ?? "endpoint";
    const app = fastifyApp(endpoint, options, () => this.current === "READY");
    this.app = app;
    addBodyParsers(app);
    addErrorAnswers(app, endpoint, this.log);
    addPing(app, () => this.current);
    for (const route of declarationOf(endpoint).routes) addRoute(app, route, this.routeHandler(route));
    addMetrics(app, endpoint, this.log, () => this.running);
    addOpenApi(app, endpoint, this.log);
    if (this.log.level === "DEBUG" || this.log.level === "TRACE") {
      app.addHook("onResponse", async (request, reply) => {
        this.log.debug(
          `${request.method} ${request.url} ${reply.statusCode} ${Math.round(reply.elapsedTime)} ms`,
        );
      });
    }
  }

  get state(): EndpointState {
    return this.current;
  }

  /** Requests being answered by route functions right now. */
  get inFlight(): number {
    return this.running;
  }

  /** Runs the endpoint's onStart hooks; true when it is READY, false when one failed. */
  async start(): Promise<boolean> {
    try {
      await this.options.ready?.();
      for (const hook of declarationOf(this.endpoint).startHooks) await hook();
    } catch (err) {
      this.current = "SETUP_FAILED";
      this.log.error(`onStart failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      return false;
    }
    if (this.current === "STARTING") this.current = "READY";
    return this.current === "READY";
  }

  /** Stops taking requests and waits for in-flight ones up to `graceMs`, then aborts and closes the rest. */
  async close(graceMs: number): Promise<void> {
    const { app } = this;
    if (this.current !== "SETUP_FAILED") this.current = "STOPPING";
    const closed = app.close();
    // Connections that go idle after close() began (their last answer sent) are closed as they appear.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 100);
    void closed.finally(() => clearInterval(sweep));
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<"grace-over">((resolve) => {
      timer = setTimeout(() => resolve("grace-over"), graceMs);
      this.graceOver = () => resolve("grace-over");
    });
    const outcome = await Promise.race([closed.then(() => "closed" as const), graceOver]);
    clearTimeout(timer);
    if (outcome === "grace-over") {
      if (this.running > 0) {
        this.log.warn(
          `Grace period over with ${this.running} request(s) still running; closing their connections`,
        );
      }
      for (const context of this.watched) context.abort(new RouteAbortedError("the worker is shutting down"));
      app.server.closeAllConnections();
      await closed;
    }
  }

  /** Ends a close's grace period now. */
  endGrace(): void {
    this.graceOver();
  }

  /** A stray error (docs/design.md §4.10): each request a route is still answering gets a 500 naming it, at once. */
  failInFlight(error: Error): void {
    this.current = "STOPPING";
    for (const [context, reply] of this.open) {
      this.finish(context);
      context.abort(error);
      reply.code(500).header("connection", "close").send({ error: error.message });
    }
  }

  /** A route's request handler; synchronous where the route is: a plain return value costs no promise. */
  private routeHandler(route: RouteDefinition) {
    const fn = route.fn as RouteFn<unknown, unknown>;
    const timeoutMs = this.endpoint.executionTimeoutMs;
    // Known from the path once, not looked up per request.
    const withParams = /[:*]/.test(route.path);
    return (request: FastifyRequest, reply: FastifyReply): unknown => {
      if (this.current !== "READY") {
        reply.header("retry-after", "1");
        return reply.code(503).send({ error: `Endpoint '${this.name}' is ${this.current.toLowerCase()}` });
      }
      const context = new Context(request, reply, route.path, this.log, this.watched);
      this.running++;
      this.open.set(context, reply);
      let result: unknown;
      try {
        result = fn(routeArgs(request, withParams), context);
      } catch (err) {
        this.finish(context);
        throw err;
      }
      const failed = (err: unknown) => {
        this.finish(context);
        throw err;
      };
      if (timeoutMs > 0) {
        return withTimeout(result, timeoutMs).then(
          (settled) =>
            "timedOut" in settled
              ? this.timedOut(request, reply, context, timeoutMs)
              : this.answer(reply, context, settled.value),
          failed,
        );
      }
      if (isThenable(result)) return result.then((value) => this.answer(reply, context, value), failed);
      return this.answer(reply, context, result);
    };
  }

  /** The route's value as the answer (send() shapes it). */
  private answer(reply: FastifyReply, context: Context, value: unknown): unknown {
    // Already answered 500 after a stray error.
    if (!this.open.has(context)) return reply;
    this.finish(context);
    // Shutting down: the client's keep-alive connection ends with this answer.
    if (this.current === "STOPPING") reply.header("connection", "close");
    return send(reply, value);
  }

  /** The execution timeout passed: the route's signal aborts and the client gets a 504 naming the limit. */
  private timedOut(request: FastifyRequest, reply: FastifyReply, context: Context, timeoutMs: number) {
    const message = timeoutMessage(this.name, timeoutMs);
    context.abort(new RouteAbortedError(message));
    this.finish(context);
    this.log.warn(`${request.method} ${request.url} answered 504: ${message}`);
    return reply.code(504).send({ error: message });
  }

  private finish(context: Context): void {
    if (!this.open.delete(context)) return;
    this.running--;
    context.done();
  }
}

/** The fastify app; with a model server, requests no route declares go to it first (proxyFirst). */
function fastifyApp(endpoint: Endpoint, options: RouteServerOptions, ready: () => boolean): FastifyInstance {
  const model = options.server;
  const name = endpoint.name ?? "endpoint";
  return Fastify({
    ...(model
      ? {
          serverFactory: (next: RawHandler) =>
            createServer(
              proxyFirst(
                model,
                {
                  log: options.log,
                  endpoint: name,
                  ready,
                  declared: declaredMatcher(endpoint),
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
}

/** Whether a method and path is a declared route or /ping, as fastify matches them (a GET route answers HEAD too). */
function declaredMatcher(endpoint: Endpoint): (method: string, path: string) => boolean {
  const declared = [
    ...declarationOf(endpoint).routes.map((route) => ({
      method: route.method as string,
      test: pathMatcher(route.path),
    })),
    { method: "GET", test: /^\/ping$/ },
  ];
  return (method, path) =>
    declared.some(
      (d) => (d.method === method || (method === "HEAD" && d.method === "GET")) && d.test.test(path),
    );
}

/** Refusals as `{error}` answers: malformed bodies, unsupported types, the body limit, unknown paths and methods. */
function addErrorAnswers(app: FastifyInstance, endpoint: Endpoint, log: Logger): void {
  const name = endpoint.name ?? "endpoint";
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
  const matchers = declarationOf(endpoint).routes.map((route) => ({
    method: route.method,
    test: pathMatcher(route.path),
  }));
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
}

/** `/ping`: 200 READY (with the GPUs), 204 STARTING, 503 otherwise (docs/toolkit.md §4.2). */
function addPing(app: FastifyInstance, state: () => EndpointState): void {
  app.get("/ping", async (_request, reply) => {
    const now = state();
    if (now === "READY") {
      // The GPUs this worker runs on, where it has any: what people check first on a GPU endpoint.
      const gpu = gpuSummary();
      return gpu ? { status: "healthy", gpu } : { status: "healthy" };
    }
    if (now === "STARTING") return reply.code(204).send();
    return reply.code(503).send({ status: "unhealthy", state: now });
  });
}

/** One route of the endpoint; tracing on, each request runs in its span (continuing an incoming traceparent). */
function addRoute(
  app: FastifyInstance,
  route: RouteDefinition,
  handler: (request: FastifyRequest, reply: FastifyReply) => unknown,
): void {
  const traced = tracing;
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

/** Every answer counted, /ping's and refusals' too; /metrics itself only where no user route claims the path. */
function addMetrics(app: FastifyInstance, endpoint: Endpoint, log: Logger, inFlight: () => number): void {
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
  if (declarationOf(endpoint).routes.some((route) => claimsPath(route.path, METRICS_PATH))) {
    log.debug(`${METRICS_PATH} is a route of this endpoint: the worker's metrics are not served`);
  } else {
    app.get(METRICS_PATH, (_request, reply) =>
      reply.type(PROMETHEUS_CONTENT_TYPE).send(metrics.text(inFlight())),
    );
  }
}

/** The endpoint's OpenAPI document (docs/design.md §4.12), unless the app serves that path itself. */
function addOpenApi(app: FastifyInstance, endpoint: Endpoint, log: Logger): void {
  if (declarationOf(endpoint).routes.some((route) => claimsPath(route.path, OPENAPI_PATH))) {
    log.debug(`${OPENAPI_PATH} is a route of this endpoint: the generated document is not served`);
    return;
  }
  let document: Promise<unknown> | undefined;
  app.get(OPENAPI_PATH, async (_request, reply) => {
    document ??= openApiDocument(endpoint, endpoint.name ?? "endpoint");
    return reply.type("application/json; charset=utf-8").send(JSON.stringify(await document));
  });
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
  if (value instanceof Uint8Array || isResponse(value)) return reply.send(value);
  return value;
}

/**
 * A fetch Response, known by its tag as fastify knows it: Node defines `Response` lazily, so `instanceof Response`
 * would load undici (its import cost: docs/design.md §4.8) on a worker's first request, though no route returned one.
 */
const isResponse = (value: unknown): boolean =>
  typeof value === "object" &&
  value !== null &&
  Object.prototype.toString.call(value) === "[object Response]";

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
