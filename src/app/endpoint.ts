// Endpoint: a serverless endpoint in code, with HTTP routes (load-balanced) or one queue handler.
import type { IncomingHttpHeaders } from "node:http";
import {
  defineHandler,
  type HandlerDefinition,
  type HandlerOptions,
  type StartHook,
} from "../job/definition.js";
import type { HandlerFn } from "../job/types.js";
import {
  check,
  isStandardSchema,
  type StandardSchemaV1,
  ValidationError,
  withSchema,
} from "../job/validate.js";
import type { Logger } from "../log/index.js";
import type { ModelServer } from "./model-server/declare.js";
import { withServer } from "./model-server/handler.js";
import { registry } from "./registry.js";
import { checkMethod, checkPath, type HttpMethod, NO_ROUTES_MESSAGE, routeKey } from "./rules.js";
import {
  EndpointConfigError,
  type EndpointOptions,
  type EndpointSettings,
  type NodeVersion,
  parseEndpointOptions,
} from "./settings.js";
import type { SocketFn, SocketRouteDefinition } from "./sockets.js";

/** The JSON object a route receives by default: body keys (or query keys) plus path parameters. */
export type RouteArgs = Record<string, unknown>;

/** Everything about the HTTP request, for routes that need more than their arguments. */
export interface RouteRequest {
  readonly method: string;
  /** The route's path as declared, e.g. `/hello/:name`. */
  readonly path: string;
  readonly url: string;
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, string | string[]>>;
  /** The parsed JSON body, or undefined when none was sent. */
  readonly body: unknown;
  readonly headers: IncomingHttpHeaders;
  /** Aborted when the client goes away, the execution timeout passes, or the worker stops. */
  readonly signal: AbortSignal;
  readonly log: Logger;
}

/**
 * A route function. `args` is the JSON body object (docs/toolkit.md §4.3: top-level keys are the arguments),
 * or the query for GET and body-less requests, with path parameters merged in; a body that is not an
 * object is passed as it is. The return value is sent as JSON; return a `Response` for full control.
 */
export type RouteFn<A = RouteArgs, R = unknown> = (args: A, request: RouteRequest) => R | Promise<R>;

export interface RouteOptions {
  /** A Standard Schema for the route's arguments: a request that fails it is answered 400 with every issue. */
  body?: StandardSchemaV1;
}

/**
 * What a route method returns: the route's function, and (in its type only: no such property exists) its
 * method, path, the arguments a caller sends and the answer, which `endpoint<typeof app>` of
 * flash-worker/client reads from the exported route.
 */
export type DeclaredRoute<M extends string, P extends string, In, A, R> = RouteFn<A, R> & {
  readonly "~route"?: { readonly method: M; readonly path: P; readonly input: In; readonly answer: R };
};

export interface RouteDefinition {
  readonly method: HttpMethod;
  /** As fastify matches it (`{name}` written as `:name`). */
  readonly path: string;
  readonly fn: RouteFn<never>;
}

/** Runs before the endpoint reports ready: `/ping` answers 204 until every hook has finished (a queue worker: before its first take). */
export type { StartHook };

/** A queue handler declared through an Endpoint: it carries the endpoint's settings. */
export interface EndpointHandlerDefinition<I = unknown, O = unknown> extends HandlerDefinition<I, O> {
  readonly endpoint: EndpointSettings;
}

/**
 * What the runtime and the toolkit read of an Endpoint: what it serves and how. Internal: reached through
 * declarationOf(), never through the public class, so none of it is part of the package's API.
 */
export interface EndpointDeclaration {
  readonly settings: EndpointSettings;
  /** Routes in declaration order. */
  readonly routes: readonly RouteDefinition[];
  /** WebSocket routes in declaration order. */
  readonly sockets: readonly SocketRouteDefinition[];
  /** The queue handler, when the endpoint was used with `handler()`. */
  readonly queueHandler: EndpointHandlerDefinition | undefined;
  /** The endpoint's onStart hooks, in order. */
  readonly startHooks: readonly StartHook[];
  readonly isLoadBalanced: boolean;
  /** Throws the toolkit's message when there is nothing to serve (checked when the endpoint starts). */
  assertRoutes(): void;
}

// Symbol.for, not a module-private WeakMap: the runtime running the app may be another copy of the package
// than the one the app imported (the image's and the app's own), and both must read the same declaration.
const DECLARATION = Symbol.for("flash-worker.endpoint.declaration");

class Declaration implements EndpointDeclaration {
  readonly table = new Map<string, RouteDefinition>();
  readonly socketTable = new Map<string, SocketRouteDefinition>();
  readonly hooks: StartHook[] = [];
  queue: EndpointHandlerDefinition | undefined;

  constructor(readonly settings: EndpointSettings) {}

  get routes(): readonly RouteDefinition[] {
    return [...this.table.values()];
  }
  get sockets(): readonly SocketRouteDefinition[] {
    return [...this.socketTable.values()];
  }
  get queueHandler(): EndpointHandlerDefinition | undefined {
    return this.queue;
  }
  get startHooks(): readonly StartHook[] {
    return this.hooks;
  }
  get isLoadBalanced(): boolean {
    return (
      this.table.size > 0 || this.socketTable.size > 0 || (this.settings.server !== undefined && !this.queue)
    );
  }

  assertRoutes(): void {
    if (this.isLoadBalanced || this.settings.server) return;
    const name = this.settings.name ? ` '${this.settings.name}'` : "";
    throw new EndpointConfigError(
      `${NO_ROUTES_MESSAGE}: endpoint${name} has no routes. Add one with .get/.post/.put/.delete/.patch(path, fn), or use .handler(fn) for a queue-based endpoint.`,
    );
  }

  /** A route or socket needs a named endpoint that is not already a queue handler. */
  assertRoutable(): void {
    if (this.settings.name === undefined) {
      throw new EndpointConfigError(
        "name is required for load-balanced endpoints. use new Endpoint({ name: 'my-api', ... }) when registering routes.",
      );
    }
    if (this.queue) {
      throw new EndpointConfigError(
        "cannot add routes after using Endpoint as a queue handler (.handler()). use one pattern or the other.",
      );
    }
  }
}

type Declared = { [DECLARATION]?: Declaration };

/** The runtime's and the toolkit's view of an Endpoint: its settings, routes, sockets, queue handler and hooks. */
export function declarationOf(endpoint: Endpoint): EndpointDeclaration {
  return stateOf(endpoint);
}

function stateOf(endpoint: Endpoint): Declaration {
  const state = (endpoint as unknown as Declared)[DECLARATION];
  // Another version of the package, from before the declaration had this key, made it (see versionMismatch()).
  if (state === undefined)
    throw new EndpointConfigError(
      "this Endpoint was made by a copy of flash-worker the runtime cannot read: use the runtime's copy (remove flash-worker from the app's dependencies) or the same version",
    );
  return state;
}

/** Declaring a route or the queue handler makes the endpoint the file's app, for `flash` and `start()`. */
function declared(endpoint: Endpoint): void {
  registry().app = endpoint;
}

/**
 * A serverless endpoint in code (see the README, "Load-balanced endpoints"): its configuration, and either
 * HTTP routes (a load-balanced endpoint, `api.post("/x", fn)`) or one queue handler (`api.handler(fn)`),
 * never both. Declaring routes or a queue handler records it as the file's app, for `flash start/dev/build`
 * and `start(endpoint)`; unlike handler() and remote(), it never starts a server by itself.
 */
export class Endpoint {
  readonly kind = "endpoint" as const;

  constructor(options: EndpointOptions = {}) {
    const state = new Declaration(parseEndpointOptions(options));
    // Not enumerable and not in the class's type: the declaration is the runtime's, not the user's.
    Object.defineProperty(this, DECLARATION, { value: state });
    // A model server alone is an app: every request goes to it.
    if (state.settings.server) declared(this);
  }

  /** The model server declared with `server`, if any. */
  get server(): ModelServer | undefined {
    return stateOf(this).settings.server;
  }
  get name(): string | undefined {
    return stateOf(this).settings.name;
  }
  get gpu(): readonly string[] | undefined {
    return stateOf(this).settings.gpu;
  }
  get cpu(): readonly string[] | undefined {
    return stateOf(this).settings.cpu;
  }
  get workers(): readonly [number, number] {
    return stateOf(this).settings.workers;
  }
  get volume(): string | undefined {
    return stateOf(this).settings.volume;
  }
  get dependencies(): readonly string[] {
    return stateOf(this).settings.dependencies;
  }
  get executionTimeoutMs(): number {
    return stateOf(this).settings.executionTimeoutMs;
  }
  get nodeVersion(): NodeVersion {
    return stateOf(this).settings.nodeVersion;
  }

  /** Declares a route; returns `fn` so it can still be called or tested directly. */
  route<M extends string, P extends string, S extends StandardSchemaV1, R = unknown>(
    method: M,
    path: P,
    fn: RouteFn<StandardSchemaV1.InferOutput<S>, R>,
    options: { body: S },
  ): DeclaredRoute<Uppercase<M>, P, StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>, R>;
  route<M extends string, P extends string, A = RouteArgs, R = unknown>(
    method: M,
    path: P,
    fn: RouteFn<A, R>,
    options?: RouteOptions,
  ): DeclaredRoute<Uppercase<M>, P, A, A, R>;
  route<A = RouteArgs, R = unknown>(
    method: string,
    path: string,
    fn: RouteFn<A, R>,
    options: RouteOptions = {},
  ): RouteFn<A, R> {
    const state = stateOf(this);
    const verb = checkMethod(method);
    const fastifyPath = checkPath(path);
    state.assertRoutable();
    if (typeof fn !== "function") {
      throw new EndpointConfigError(`route ${verb} ${path}: expected a function, got ${typeof fn}`);
    }
    if (options.body !== undefined && !isStandardSchema(options.body)) {
      throw new EndpointConfigError(
        `route ${verb} ${path}: body must be a Standard Schema (a zod, valibot or arktype schema)`,
      );
    }
    const key = routeKey(verb, fastifyPath);
    const existing = state.table.get(key) ?? (verb === "GET" ? state.socketTable.get(key) : undefined);
    if (existing) {
      throw new EndpointConfigError(
        `duplicate route: ${verb} ${path} on endpoint '${state.settings.name}' (already registered to '${functionName(existing.fn)}')`,
      );
    }
    const run = options.body ? withBodySchema(fn as RouteFn<unknown, R>, options.body) : fn;
    state.table.set(key, { method: verb, path: fastifyPath, fn: run as RouteFn<never> });
    declared(this);
    return fn;
  }

  get<P extends string, S extends StandardSchemaV1, R = unknown>(
    path: P,
    fn: RouteFn<StandardSchemaV1.InferOutput<S>, R>,
    options: { body: S },
  ): DeclaredRoute<"GET", P, StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>, R>;
  get<P extends string, A = RouteArgs, R = unknown>(
    path: P,
    fn: RouteFn<A, R>,
    options?: RouteOptions,
  ): DeclaredRoute<"GET", P, A, A, R>;
  get<P extends string, A, R>(path: P, fn: RouteFn<A, R>, options?: RouteOptions): RouteFn<A, R> {
    return this.route("GET", path, fn, options);
  }
  post<P extends string, S extends StandardSchemaV1, R = unknown>(
    path: P,
    fn: RouteFn<StandardSchemaV1.InferOutput<S>, R>,
    options: { body: S },
  ): DeclaredRoute<"POST", P, StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>, R>;
  post<P extends string, A = RouteArgs, R = unknown>(
    path: P,
    fn: RouteFn<A, R>,
    options?: RouteOptions,
  ): DeclaredRoute<"POST", P, A, A, R>;
  post<P extends string, A, R>(path: P, fn: RouteFn<A, R>, options?: RouteOptions): RouteFn<A, R> {
    return this.route("POST", path, fn, options);
  }
  put<P extends string, S extends StandardSchemaV1, R = unknown>(
    path: P,
    fn: RouteFn<StandardSchemaV1.InferOutput<S>, R>,
    options: { body: S },
  ): DeclaredRoute<"PUT", P, StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>, R>;
  put<P extends string, A = RouteArgs, R = unknown>(
    path: P,
    fn: RouteFn<A, R>,
    options?: RouteOptions,
  ): DeclaredRoute<"PUT", P, A, A, R>;
  put<P extends string, A, R>(path: P, fn: RouteFn<A, R>, options?: RouteOptions): RouteFn<A, R> {
    return this.route("PUT", path, fn, options);
  }
  delete<P extends string, S extends StandardSchemaV1, R = unknown>(
    path: P,
    fn: RouteFn<StandardSchemaV1.InferOutput<S>, R>,
    options: { body: S },
  ): DeclaredRoute<"DELETE", P, StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>, R>;
  delete<P extends string, A = RouteArgs, R = unknown>(
    path: P,
    fn: RouteFn<A, R>,
    options?: RouteOptions,
  ): DeclaredRoute<"DELETE", P, A, A, R>;
  delete<P extends string, A, R>(path: P, fn: RouteFn<A, R>, options?: RouteOptions): RouteFn<A, R> {
    return this.route("DELETE", path, fn, options);
  }
  patch<P extends string, S extends StandardSchemaV1, R = unknown>(
    path: P,
    fn: RouteFn<StandardSchemaV1.InferOutput<S>, R>,
    options: { body: S },
  ): DeclaredRoute<"PATCH", P, StandardSchemaV1.InferInput<S>, StandardSchemaV1.InferOutput<S>, R>;
  patch<P extends string, A = RouteArgs, R = unknown>(
    path: P,
    fn: RouteFn<A, R>,
    options?: RouteOptions,
  ): DeclaredRoute<"PATCH", P, A, A, R>;
  patch<P extends string, A, R>(path: P, fn: RouteFn<A, R>, options?: RouteOptions): RouteFn<A, R> {
    return this.route("PATCH", path, fn, options);
  }

  /** Work to finish before the endpoint takes requests, e.g. loading a model; hooks run in order. */
  onStart(hook: StartHook): this {
    if (typeof hook !== "function")
      throw new EndpointConfigError(`onStart expects a function, got ${typeof hook}`);
    stateOf(this).hooks.push(hook);
    return this;
  }

  /**
   * Uses the endpoint as a queue-based endpoint (the toolkit's direct decorator): `fn` is the job handler,
   * run with the endpoint's `maxConcurrency` unless `options.concurrency` says otherwise.
   */
  handler<S extends StandardSchemaV1, O = unknown>(
    fn: HandlerFn<StandardSchemaV1.InferOutput<S>, O>,
    options: HandlerOptions & { input: S },
  ): HandlerDefinition<StandardSchemaV1.InferInput<S>, O>;
  handler<I = unknown, O = unknown>(fn: HandlerFn<I, O>, options?: HandlerOptions): HandlerDefinition<I, O>;
  handler<I = unknown, O = unknown>(
    fn: HandlerFn<I, O>,
    options: HandlerOptions = {},
  ): HandlerDefinition<I, O> {
    const state = stateOf(this);
    // Routes or sockets make it load-balanced; a declared model server alone does not (its queue handler may come).
    if (state.table.size > 0 || state.socketTable.size > 0) {
      throw new EndpointConfigError(
        "cannot use Endpoint as a queue handler (.handler()) after registering routes with .get()/.post()/etc. use one pattern or the other.",
      );
    }
    const { settings } = state;
    if (state.queue) {
      throw new EndpointConfigError(
        `endpoint${settings.name ? ` '${settings.name}'` : ""} already has a queue handler`,
      );
    }
    const { server } = settings;
    const defaults = {
      concurrency: settings.maxConcurrency,
      returnAggregateStream: server !== undefined,
    };
    const definition = defineHandler(fn, { ...defaults, ...options });
    const served = server ? withServer(definition as HandlerDefinition, server) : definition;
    const hooks = state.hooks;
    // The definition carries the endpoint's settings (for `flash build` and the runtime), an internal field.
    const withSettings = {
      ...served,
      endpoint: settings,
      // The endpoint's onStart hooks (declared before or after .handler()), then the handler's own.
      get startHooks() {
        return [...hooks, ...definition.startHooks];
      },
    } as EndpointHandlerDefinition<I, O>;
    state.queue = withSettings as EndpointHandlerDefinition;
    declared(this);
    return withSettings;
  }

  /**
   * Declares a WebSocket route (a GET that upgrades): `fn` runs for each connection, reads the client's
   * messages with `for await`, answers with `socket.send()`; the connection closes when it returns.
   */
  websocket(path: string, fn: SocketFn): SocketFn {
    const state = stateOf(this);
    const fastifyPath = checkPath(path);
    state.assertRoutable();
    if (typeof fn !== "function") {
      throw new EndpointConfigError(`websocket ${path}: expected a function, got ${typeof fn}`);
    }
    const key = routeKey("GET", fastifyPath);
    const existing = state.socketTable.get(key) ?? state.table.get(key);
    if (existing) {
      throw new EndpointConfigError(
        `duplicate route: GET ${path} on endpoint '${state.settings.name}' (already registered to '${functionName(existing.fn)}'); a WebSocket route is a GET`,
      );
    }
    state.socketTable.set(key, { path: fastifyPath, fn });
    declared(this);
    return fn;
  }
}

/** A route whose arguments are validated first; a refused request is answered 400 with every issue. */
function withBodySchema<R>(
  fn: RouteFn<unknown, R>,
  schema: StandardSchemaV1,
): RouteFn<unknown, R | Response> {
  const validated = (args: unknown, request: RouteRequest) => {
    const checked = check(schema, args, "body");
    const answer = (c: Awaited<typeof checked>) => {
      if (c.ok) return fn(c.value, request);
      const error = new ValidationError("request body", c.issues);
      return Response.json({ error: error.message, issues: error.issues }, { status: 400 });
    };
    return checked instanceof Promise ? checked.then(answer) : answer(checked);
  };
  // Keeps the user's function name for the duplicate-route message.
  return withSchema(Object.defineProperty(validated, "name", { value: fn.name }), schema);
}

function functionName(fn: RouteFn<never>): string {
  return fn.name ? fn.name : "<anonymous>";
}
