// The chat-completion-compatible base URL `/v2/<endpoint_id>/openai/v1`: each request becomes a job whose
// input is `{openai_route, openai_input}` (the platform's language-model worker convention), answered with
// the job's output, or as Server-Sent Events from its stream chunks when the body says `stream: true`.

import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { EndpointState } from "../state/endpoint.js";
import { isTerminal, type JobRecord } from "../state/jobs.js";
import type { PlatformContext } from "./context.js";
import {
  addJsonParser,
  answerRefusal,
  bodyCost,
  checkKey,
  clientGone,
  endpointFrom,
  flashStatus,
  HttpError,
  roomForBody,
  unsupportedBody,
} from "./http.js";

/** Bodies up to the /runsync limit (docs/protocol.md §11). */
const BODY_LIMIT = 20 * 1024 * 1024;
/** A request waits for its job at most this long beyond the job's own execution timeout (queue time). */
const QUEUE_ALLOWANCE_MS = 5 * 60_000;
const DONE_EVENT = "data: [DONE]\n\n";

/** OpenAI clients read `{"error": {"message", "type", "code"}}`. */
function openaiError(status: number, message: string, code?: string) {
  const type =
    status === 401 ? "authentication_error" : status < 500 ? "invalid_request_error" : "server_error";
  return { error: { message, type, code: code ?? null, param: null } };
}

/** The error_type a chat-completion worker gives a route it does not implement (app/openai.ts): a 404. */
const ROUTE_NOT_FOUND = "<class 'OpenAIRouteNotFoundError'>";
/** runpod-python's error of a generator handler: `handler: <message> \ntraceback: <stack>` (docs/protocol.md §4.3). */
const GENERATOR_ERROR = /^handler: ([\s\S]*?) \ntraceback: /;

/** The worker's error text without its traceback: runpod-python's JSON error string carries `error_message`. */
export function jobErrorMessage(error: unknown): string {
  if (typeof error === "string") {
    try {
      const parsed = JSON.parse(error) as { error_message?: unknown };
      if (typeof parsed.error_message === "string") return parsed.error_message;
    } catch {
      // Not JSON: a generator's error string, or the text is the message.
    }
    return GENERATOR_ERROR.exec(error)?.[1] ?? error;
  }
  return JSON.stringify(error) ?? "unknown error";
}

/** The fields of a worker's JSON error string this route reads. */
interface ErrorFields {
  error_type?: unknown;
  upstream_status?: unknown;
  upstream_content_type?: unknown;
  upstream_body?: unknown;
}

function errorFields(error: unknown): ErrorFields {
  if (typeof error !== "string") return {};
  try {
    const parsed = JSON.parse(error) as unknown;
    return typeof parsed === "object" && parsed !== null ? (parsed as ErrorFields) : {};
  } catch {
    return {};
  }
}

/** A model server's own answer, as its worker's error carries it (src/job/errors.ts): status, content type, body. */
interface UpstreamFailure {
  status: number;
  contentType: string;
  body: string;
}

/** The server's answer a FAILED job carries, given to the caller as the server sent it; undefined for the rest. */
function upstreamFailure(job: JobRecord): UpstreamFailure | undefined {
  if (job.status !== "FAILED") return undefined;
  const fields = errorFields(job.error);
  const { upstream_status: status, upstream_content_type: contentType, upstream_body: body } = fields;
  if (typeof status !== "number" || !Number.isInteger(status) || status < 400 || status > 599)
    return undefined;
  if (typeof contentType !== "string" || typeof body !== "string") return undefined;
  return { status, contentType, body };
}

/** What a non-streaming request gets: a generator's aggregated single answer is unwrapped. */
function answerOf(job: JobRecord): unknown {
  const output = job.output;
  if (job.streamed && Array.isArray(output) && output.length === 1) return output[0];
  return output;
}

/** One SSE event for a stream chunk: strings are the worker's own `data:` lines, objects are wrapped. */
function sseOf(chunk: unknown): string {
  if (typeof chunk === "string") return chunk.endsWith("\n\n") ? chunk : `${chunk.replace(/\n?$/, "\n")}\n`;
  return `data: ${JSON.stringify(chunk)}\n\n`;
}

function failure(job: JobRecord): { status: number; message: string } {
  if (job.status === "TIMED_OUT") return { status: 504, message: `Job ${job.id} timed out` };
  if (job.status === "CANCELLED") return { status: 499, message: `Job ${job.id} was cancelled` };
  if (job.status === "FAILED")
    return {
      status: errorFields(job.error).error_type === ROUTE_NOT_FOUND ? 404 : 500,
      message: jobErrorMessage(job.error),
    };
  return { status: 504, message: `Job ${job.id} did not finish in time (status ${job.status})` };
}

export async function openaiApi(app: FastifyInstance, ctx: PlatformContext): Promise<void> {
  const { scheduler } = ctx;
  addJsonParser(app, "application/json");
  app.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, false));
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const status = flashStatus(err) ?? err.statusCode ?? 500;
    if (status >= 500) ctx.log.error(`${request.method} ${request.url} failed: ${err.message}`);
    const message =
      err.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE"
        ? unsupportedBody(request.headers["content-type"])
        : err.message;
    return answerRefusal(request, reply, status, openaiError(status, message));
  });

  const submit = (request: FastifyRequest, route: string, body: unknown) => {
    const endpoint = endpointFrom(scheduler, request);
    const input = { openai_route: route, openai_input: body ?? {} };
    return { endpoint, job: scheduler.submit(endpoint, { input, sync: true, bytes: bodyCost(request) }) };
  };

  const answer = async (request: FastifyRequest, reply: FastifyReply, route: string, body: unknown) => {
    if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
      throw new HttpError(400, "The request body must be a JSON object");
    }
    const { endpoint, job } = submit(request, route, body);
    const gone = clientGone(reply);
    if ((body as { stream?: unknown } | undefined)?.stream === true) {
      return streamJob(endpoint, job, reply, gone);
    }
    await scheduler.waitForTerminal(job, job.executionTimeoutMs + QUEUE_ALLOWANCE_MS, gone);
    if (gone.aborted) return cancelUnfinished(endpoint, job);
    if (job.status === "COMPLETED") return reply.send(answerOf(job));
    cancelUnfinished(endpoint, job);
    return sendFailure(reply, job);
  };

  /** The server's own answer when the job carries one, else the platform's words for the job's end. */
  const sendFailure = (reply: FastifyReply, job: JobRecord) => {
    const upstream = upstreamFailure(job);
    if (upstream)
      return reply.code(upstream.status).header("content-type", upstream.contentType).send(upstream.body);
    const { status, message } = failure(job);
    return reply.code(status).send(openaiError(status, message));
  };

  const cancelUnfinished = (endpoint: EndpointState, job: JobRecord) => {
    if (!isTerminal(job.status)) scheduler.cancel(endpoint, job);
  };

  /** Chunks as they are posted; the response starts with the first one, so a job that fails first is a plain error. */
  const streamJob = async (
    endpoint: EndpointState,
    job: JobRecord,
    reply: FastifyReply,
    gone: AbortSignal,
  ) => {
    const deadline = Date.now() + job.executionTimeoutMs + QUEUE_ALLOWANCE_MS;
    let sent = 0;
    let started = false;
    let done = false;
    const res = reply.raw;
    const write = (text: string) => {
      if (!started) {
        reply.hijack();
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          connection: "keep-alive",
        });
        started = true;
      }
      if (text.includes(DONE_EVENT)) done = true;
      res.write(text);
    };
    const flush = () => {
      for (; sent < job.stream.length; sent++) write(sseOf(job.stream[sent]?.output));
    };
    // A chunk goes to the client as the worker's stream post records it, before that post is answered: on a busy
    // host, answering the worker first lets it take the CPU the client's write was waiting for.
    const early = () => {
      if (gone.aborted) return;
      try {
        flush();
      } catch {
        // Never into the worker's post or the other waiters: the loop's own flush meets the error and reports it.
      }
    };
    for (;;) {
      flush();
      if (isTerminal(job.status) || gone.aborted || scheduler.closed || Date.now() >= deadline) break;
      const waitMs = Math.min(ctx.longPollMs, Math.max(1, deadline - Date.now()));
      await scheduler.waitForChange(job, waitMs, gone, early);
    }
    if (gone.aborted) return cancelUnfinished(endpoint, job);
    if (job.status === "COMPLETED" && !job.streamed && job.hasOutput) write(sseOf(job.output));
    if (job.status !== "COMPLETED") {
      cancelUnfinished(endpoint, job);
      if (!started) return sendFailure(reply, job);
      const { status, message } = failure(job);
      write(`data: ${JSON.stringify(openaiError(status, message))}\n\n`);
    }
    if (!started) write("");
    if (!done) write(DONE_EVENT);
    res.end();
  };

  // A body the memory budget has no room for is refused before it is read (429).
  const preParsing = roomForBody(scheduler);
  app.post("/chat/completions", { bodyLimit: BODY_LIMIT, preParsing }, (request, reply) =>
    answer(request, reply, "/v1/chat/completions", request.body),
  );
  app.post("/completions", { bodyLimit: BODY_LIMIT, preParsing }, (request, reply) =>
    answer(request, reply, "/v1/completions", request.body),
  );
  app.get("/models", (request, reply) => answer(request, reply, "/v1/models", undefined));
}
