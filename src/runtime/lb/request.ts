// A load-balanced route's request: the bodies it parses, the arguments it passes, the context it hands the route.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { RouteArgs, RouteRequest } from "../../app/endpoint.js";
import { FlashError } from "../../flash-error.js";
import { JsonTooDeepError, MAX_JSON_DEPTH, scanJson } from "../../http/json.js";
import type { Logger } from "../../log/index.js";

/** Per-request context, built cheaply: the AbortSignal exists only if a route asks for it. */
/** Why a route's signal aborted: the client left, the worker is shutting down, or the execution timeout passed. */
export class RouteAbortedError extends FlashError {
  readonly code = "ROUTE_ABORTED";
  override name = "RouteAbortedError";
}

export class Context implements RouteRequest {
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
        if (!res.writableFinished) controller.abort(new RouteAbortedError("client closed the connection"));
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

/** JSON (an empty body is no body) and forms, as the toolkit's routes take them (docs/toolkit.md §4.3). */
export function addBodyParsers(app: FastifyInstance): void {
  // The default parser (with prototype-poisoning checks), but an empty JSON body is no body.
  const parseJson = app.getDefaultJsonParser("error", "ignore");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text.length === 0 || /^\s*$/.test(text)) return done(null, undefined);
    // Nesting past the limit is refused before parsing, as the local platform refuses it (docs/toolkit.md §4.3).
    const { tooDeepAt } = scanJson(text);
    if (tooDeepAt >= 0) {
      const deep = new JsonTooDeepError(MAX_JSON_DEPTH, tooDeepAt);
      return done(Object.assign(deep, { statusCode: 400 }), undefined);
    }
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
export function routeArgs(request: FastifyRequest, withParams: boolean): unknown {
  const { body } = request;
  const params = request.params as RouteArgs;
  if (body === undefined || request.method === "GET") {
    const query = request.query as RouteArgs;
    return withParams ? { ...query, ...params } : query;
  }
  if (!withParams || !isPlainObject(body)) return body;
  return { ...body, ...params };
}
