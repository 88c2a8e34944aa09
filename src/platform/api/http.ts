// What the platform's HTTP routes share: error answers, JSON parsing, key checks, ?wait= and size limits.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { closest } from "../../app/settings.js";
import { FlashError, isFlashError } from "../../flash-error.js";
import { drainRequest } from "../../http/drain.js";
import { JsonTooDeepError, jsonCost, MAX_JSON_DEPTH, scanJson } from "../../http/json.js";
import type { Logger } from "../../log/index.js";
import type { EndpointState } from "../state/endpoint.js";
import type { Scheduler } from "../state/scheduler.js";

/** An error with the HTTP status to answer it with; the body is `{"error": message}`. */
export class HttpError extends FlashError {
  readonly code = "HTTP_STATUS";
  override name = "HttpError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const MB = 1024 * 1024;

export const formatBytes = (bytes: number): string =>
  bytes % MB === 0 ? `${bytes / MB} MB` : `${(bytes / MB).toFixed(1)} MB`;

/** The 413 message of a body over a route's limit. */
export const bodyTooLarge = (limit: number, path: string): string =>
  `Request body is larger than the ${formatBytes(limit)} limit of ${path}`;

/** The 415 message: curl's `-d` sends a form type, so say which header the platform reads instead. */
export const unsupportedBody = (type: string | undefined): string =>
  `Unsupported Media Type${type ? ` ${type}` : ""}: send the body as JSON with the header Content-Type: application/json (curl: -H 'Content-Type: application/json')`;

/** The status of one of our own errors: an HttpError's, 429 for a full memory budget; undefined for any other. */
export function flashStatus(err: unknown): number | undefined {
  if (isFlashError(err, "HTTP_STATUS")) return (err as HttpError).status;
  // As RunPod answers a full queue: the client may retry once jobs finish.
  if (isFlashError(err, "PLATFORM_MEMORY_FULL")) return 429;
  return undefined;
}

/** Sends an error answer; a body refused for memory before it was read is read to its end first (drain.ts). */
export function answerRefusal(request: FastifyRequest, reply: FastifyReply, status: number, body: unknown) {
  if (status !== 429) return reply.code(status).send(body);
  return drainRequest(request.raw).then(() => reply.code(status).send(body));
}

/** Turns fastify's and our own errors into `{"error": "..."}` with a status a client can act on. */
export function errorHandler(log: Logger) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const own = flashStatus(err);
    if (own !== undefined) return answerRefusal(request, reply, own, { error: err.message });
    if (err.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      const limit = request.routeOptions.bodyLimit ?? 0;
      return drainRequest(request.raw).then(() =>
        reply.code(413).send({ error: bodyTooLarge(limit, request.url.split("?")[0] ?? "") }),
      );
    }
    if (err.validation) return reply.code(400).send({ error: `Invalid request: ${err.message}` });
    if (err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
      return reply.code(415).send({ error: unsupportedBody(request.headers["content-type"]) });
    }
    const status = err.statusCode ?? 500;
    if (status >= 500) log.error(`${request.method} ${request.url} failed: ${err.message}`);
    return reply.code(status).send({ error: err.message });
  };
}

/** The 400 message of a body nested past MAX_JSON_DEPTH. */
export const tooDeepBody = (err: JsonTooDeepError): string => `Invalid JSON body: ${err.message}`;

/** What each parsed JSON body holds in memory (src/http/json.ts jsonCost), by its request. */
const bodyCosts = new WeakMap<IncomingMessage, number>();

/** What the request's JSON body holds in memory once parsed: 0 without one. */
export const bodyCost = (request: FastifyRequest): number => bodyCosts.get(request.raw) ?? 0;

/**
 * JSON bodies, no deeper than MAX_JSON_DEPTH (checked before parsing); an empty body is no body (curl -X POST
 * .../cancel/ID with a JSON content type).
 */
export function addJsonParser(app: FastifyInstance, contentType: string | string[]): void {
  app.addContentTypeParser(contentType, { parseAs: "string" }, (request, body, done) => {
    const text = String(body);
    if (text.trim() === "") return done(null, undefined);
    const shape = scanJson(text);
    if (shape.tooDeepAt >= 0) {
      const deep = new JsonTooDeepError(MAX_JSON_DEPTH, shape.tooDeepAt);
      return done(new HttpError(400, tooDeepBody(deep)), undefined);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return done(new HttpError(400, `Malformed JSON body: ${(err as Error).message}`), undefined);
    }
    const length = Number(request.headers["content-length"]);
    const bytes = Number.isSafeInteger(length) ? length : Buffer.byteLength(text);
    bodyCosts.set(request.raw, jsonCost(bytes, shape));
    done(null, value);
  });
}

function sameKey(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Client calls carry `Authorization: Bearer <key>`; workers send the raw key (docs/protocol.md §3.1). */
export function checkKey(request: Pick<FastifyRequest, "headers">, apiKey: string, allowRaw: boolean): void {
  const header = request.headers.authorization;
  if (typeof header === "string") {
    if (header.startsWith("Bearer ") && sameKey(header.slice(7).trim(), apiKey)) return;
    if (allowRaw && sameKey(header.trim(), apiKey)) return;
  }
  throw new HttpError(
    401,
    header ? "Unauthorized: invalid API key" : "Unauthorized: missing Authorization: Bearer <API key> header",
  );
}

/** A preParsing hook: a body the memory budget has no room for (by its Content-Length) is refused before it is read. */
export function roomForBody(scheduler: Scheduler) {
  return async (request: FastifyRequest): Promise<void> => {
    const length = Number(request.headers["content-length"]);
    if (Number.isSafeInteger(length)) scheduler.checkRoom(length);
  };
}

/** The endpoint named in the URL, or a 404 naming the nearest existing one. */
export function endpointFrom(scheduler: Scheduler, request: FastifyRequest): EndpointState {
  const { endpointId } = request.params as { endpointId: string };
  const endpoint = scheduler.endpoint(endpointId);
  if (!endpoint) {
    const known = scheduler.listEndpoints().map((e) => e.id);
    throw new HttpError(404, `Endpoint ${endpointId} not found${didYouMean(endpointId, known)}`);
  }
  return endpoint;
}

/** ` (did you mean <id>?)` when an existing id is close to the one asked for, else nothing. */
export function didYouMean(id: string, known: readonly string[]): string {
  const near = closest(id, known);
  return near && near !== id ? ` (did you mean ${near}?)` : "";
}

/** Aborts when the client goes away before its answer is fully written. */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** A `?wait=` value in ms within the platform's range 1000–300000 (docs/protocol.md §16), or the default. */
export function waitParam(raw: unknown, fallback: number): number {
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1_000 || value > 300_000) {
    throw new HttpError(400, `Invalid wait "${String(raw)}": expected milliseconds from 1000 to 300000`);
  }
  return value;
}
