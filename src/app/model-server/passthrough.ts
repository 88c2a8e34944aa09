// The OpenAI passthrough: a job whose input is {openai_route, openai_input} sent to the model server's route,
// a streamed answer relayed as stream chunks of SSE events (`data: …\n\n`, as worker-vllm yields them), one per event.
import type { IncomingMessage } from "node:http";
import { formatSse, readSse, type SseEvent } from "../../http/sse.js";
import { openStream, type WireStream } from "../../http/wire.js";
import { currentJob } from "../../job/scope.js";
import type { ModelServer } from "./declare.js";
import { ServerHttpError } from "./errors.js";

/** What the platform's `/openai/v1` base URL puts in a job's input. */
export interface OpenAIPassthroughInput {
  openai_route: string;
  openai_input?: Record<string, unknown>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** True for a job input the passthrough answers. */
export function isOpenAIInput(input: unknown): input is OpenAIPassthroughInput {
  return isObject(input) && typeof input.openai_route === "string";
}

/**
 * Sends the job to the server: the route's JSON answer, or (with `stream: true`) an async generator of SSE
 * events, each `data: {...}\n\n`, ending with the server's own `data: [DONE]`.
 */
export async function openaiPassthrough(
  server: ModelServer,
  input: OpenAIPassthroughInput,
): Promise<unknown> {
  // "/v1/chat/completions", "chat/completions" and "/chat/completions" all name the same route.
  const route = `/v1/${input.openai_route.replace(/^\/?(v1\/)?/, "")}`;
  const body = isObject(input.openai_input) ? input.openai_input : undefined;
  // The model list is a GET, whatever body the platform sent with it (`{}` from /openai/v1/models).
  const get = /\/models\/?$/.test(route);
  const signal = currentJob()?.signal;
  const { response, body: answer } = await open(server, signal, {
    method: get ? "GET" : "POST",
    url: `${server.url}${route}`,
    headers: get ? {} : { "content-type": "application/json" },
    ...(get ? {} : { body: JSON.stringify(body ?? {}) }),
  });
  if (!response.ok) {
    const text = await readText(server, signal, answer);
    const contentType = response.headers.get("content-type") ?? "text/plain";
    throw new ServerHttpError(
      response.status,
      `Model server answered ${response.status} on ${route}: ${errorMessage(text)}`,
      { status: response.status, contentType, body: text },
    );
  }
  const type = response.headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream")) return sseEvents(server, signal, answer);
  const text = await readText(server, signal, answer);
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/**
 * The request over node:http, not server.fetch: fetch's extra ~1 ms per request on Node 20 was most of what the
 * passthrough added to a first token (docs/benchmarks-history.md). The job's signal is attached, as server.fetch does.
 */
async function open(
  server: ModelServer,
  signal: AbortSignal | undefined,
  request: { method: string; url: string; headers: Record<string, string>; body?: string },
): Promise<WireStream> {
  try {
    return await openStream(signal ? { ...request, signal } : request);
  } catch (err) {
    throw await cutOff(server, signal, err);
  }
}

/** A failed exchange's error: the job's own abort as it is, else the server's exit if that cut it off. */
async function cutOff(server: ModelServer, signal: AbortSignal | undefined, err: unknown): Promise<unknown> {
  if (signal?.aborted) return err;
  return (await server.exitError()) ?? err;
}

/** The whole body as text; a body the server's exit cut off fails with that exit. */
async function readText(
  server: ModelServer,
  signal: AbortSignal | undefined,
  body: IncomingMessage,
): Promise<string> {
  const parts: Buffer[] = [];
  try {
    for await (const part of body) parts.push(part as Buffer);
  } catch (err) {
    throw await cutOff(server, signal, err);
  }
  return Buffer.concat(parts).toString("utf8");
}

/** The message of an OpenAI-style error body (`{error: {message}}` or vLLM's `{message}`), else the text. */
function errorMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (isObject(parsed.error) && typeof parsed.error.message === "string") return parsed.error.message;
    if (typeof parsed.error === "string") return parsed.error;
    if (typeof parsed.message === "string") return parsed.message;
  } catch {
    // Not JSON: the text is the message.
  }
  return text.trim().slice(0, 2000) || "(empty body)";
}

/**
 * Each complete SSE event as soon as it arrives, written back LF-framed whatever line ends the server used;
 * the body is destroyed if the job stops reading (cancel).
 */
async function* sseEvents(
  server: ModelServer,
  signal: AbortSignal | undefined,
  body: IncomingMessage,
): AsyncGenerator<string> {
  const events = readSse(body);
  try {
    for (;;) {
      let step: IteratorResult<SseEvent>;
      try {
        step = await events.next();
      } catch (err) {
        throw await cutOff(server, signal, err);
      }
      if (step.done) break;
      yield formatSse(step.value);
    }
  } finally {
    // Cancel, the execution timeout, or a failed chunk post: the server sees the disconnect and stops generating.
    if (!body.complete) body.destroy();
  }
}
