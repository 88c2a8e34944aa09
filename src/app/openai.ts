// Chat-completion-compatible workers: the platform turns `{base}/v2/<id>/openai/v1/<route>` into a job whose
// input is `{openai_route, openai_input}` (the convention of the platform's language-model worker).

import { FlashError } from "../flash-error.js";
import type { HandlerFn, Job } from "../job/types.js";

export const OPENAI_ROUTES = {
  chatCompletions: "/v1/chat/completions",
  completions: "/v1/completions",
  models: "/v1/models",
} as const;

/** What the platform puts in a job's input for a request under the compatible base URL. */
export interface OpenAIJobInput {
  openai_route: string;
  openai_input?: Record<string, unknown>;
}

export interface ChatMessage {
  role: string;
  content?: unknown;
  [field: string]: unknown;
}

export interface ChatCompletionRequest {
  model?: string;
  messages: ChatMessage[];
  stream?: boolean;
  [field: string]: unknown;
}

export interface CompletionRequest {
  model?: string;
  prompt?: unknown;
  stream?: boolean;
  [field: string]: unknown;
}

/** A response or chunk object as the client library reads it; fields the runtime does not know pass through. */
export type CompletionObject = Record<string, unknown>;

/** One answer, or the chunks of one (an iterable or a generator), sync or async. */
export type CompletionResult =
  | CompletionObject
  | Iterable<CompletionObject>
  | AsyncIterable<CompletionObject>
  | Promise<CompletionObject | Iterable<CompletionObject> | AsyncIterable<CompletionObject>>;

export interface ModelInfo {
  id: string;
  object?: string;
  created?: number;
  owned_by?: string;
  [field: string]: unknown;
}

/** What a worker author implements; each route the worker lacks answers with a clear error. */
export interface CompatibleWorker {
  /** `POST /chat/completions`: a `chat.completion`, or `chat.completion.chunk`s (a generator) for streaming. */
  chatCompletions?(body: ChatCompletionRequest, job: Job<OpenAIJobInput>): CompletionResult;
  /** `POST /completions`: a `text_completion`, or its chunks. */
  completions?(body: CompletionRequest, job: Job<OpenAIJobInput>): CompletionResult;
  /** `GET /models`: model ids or model objects. */
  models?(job: Job<OpenAIJobInput>): (string | ModelInfo)[] | Promise<(string | ModelInfo)[]>;
}

type Kind = "chat" | "text";

/**
 * A route the worker does not implement. Its name reaches the platform as the job error's error_type
 * (`<class 'OpenAIRouteNotFoundError'>`), which answers 404 as the API does, so clients do not retry.
 */
export class OpenAIRouteNotFoundError extends FlashError {
  readonly code = "OPENAI_ROUTE_NOT_FOUND";
  override name = "OpenAIRouteNotFoundError";
}

/** A job input that is neither `{openai_route, openai_input}` nor a bare chat/completion body. */
export class OpenAIInputError extends FlashError {
  readonly code = "OPENAI_INPUT_INVALID";
  override name = "OpenAIInputError";
}

/** Marks a handler made by openaiCompatible() (any copy of the package): `flash dev` prints its base URL. */
export const OPENAI_COMPATIBLE = Symbol.for("flash-worker.openai-compatible");

/** True for a handler function made by openaiCompatible(). */
export function isOpenAICompatible(fn: unknown): boolean {
  return typeof fn === "function" && (fn as { [OPENAI_COMPATIBLE]?: unknown })[OPENAI_COMPATIBLE] === true;
}

/** Server-Sent Events, as the language-model worker streams them: one `data:` line per chunk. */
export const sseEvent = (chunk: unknown): string => `data: ${JSON.stringify(chunk)}\n\n`;
export const SSE_DONE = "data: [DONE]\n\n";

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

function isChunks(value: unknown): value is Iterable<CompletionObject> | AsyncIterable<CompletionObject> {
  if (typeof value !== "object" || value === null) return false;
  return (
    Symbol.asyncIterator in value || (Symbol.iterator in value && !isObject(value)) || isGenerator(value)
  );
}

function isGenerator(value: object): boolean {
  const tag = Object.prototype.toString.call(value);
  return tag === "[object Generator]" || tag === "[object AsyncGenerator]";
}

/** The route and body of a job: the platform's `{openai_route, openai_input}`, or a bare chat/completion body. */
function routeOf(input: unknown): { route: string; body: Record<string, unknown> } {
  if (!isObject(input))
    throw new OpenAIInputError("Job input must be an object with openai_route and openai_input");
  if (typeof input.openai_route === "string") {
    return { route: input.openai_route, body: isObject(input.openai_input) ? input.openai_input : {} };
  }
  if (Array.isArray(input.messages)) return { route: OPENAI_ROUTES.chatCompletions, body: input };
  if ("prompt" in input) return { route: OPENAI_ROUTES.completions, body: input };
  throw new OpenAIInputError(
    `Job input has no openai_route: expected {"openai_route": "${OPENAI_ROUTES.chatCompletions}", "openai_input": {...}}`,
  );
}

/**
 * The queue handler of a chat-completion-compatible worker: `export default handler(openaiCompatible({...}))`.
 * Non-streaming requests get the response object; `stream: true` yields SSE `data:` events ending in
 * `data: [DONE]`. A worker may return either form for either kind of request: chunks are joined into
 * one response, and one response is sent as a single chunk. Tool-call fields pass through.
 */
export function openaiCompatible(worker: CompatibleWorker): HandlerFn<OpenAIJobInput> {
  const fn: HandlerFn<OpenAIJobInput> = (job) => {
    const { route, body } = routeOf(job.input);
    const path = route.replace(/^\/?(v1\/)?/, "/v1/").replace(/\/+$/, "");
    if (path === OPENAI_ROUTES.models) return modelList(worker, job);
    const stream = body.stream === true;
    if (path === OPENAI_ROUTES.chatCompletions && worker.chatCompletions) {
      return answer(worker.chatCompletions(body as ChatCompletionRequest, job), stream, "chat");
    }
    if (path === OPENAI_ROUTES.completions && worker.completions) {
      return answer(worker.completions(body as CompletionRequest, job), stream, "text");
    }
    const known = Object.values(OPENAI_ROUTES).includes(path as never);
    throw new OpenAIRouteNotFoundError(
      known
        ? `This worker does not implement ${path}`
        : `Unknown openai_route '${route}': expected ${Object.values(OPENAI_ROUTES).join(", ")}`,
    );
  };
  Object.defineProperty(fn, OPENAI_COMPATIBLE, { value: true });
  return fn;
}

async function modelList(worker: CompatibleWorker, job: Job<OpenAIJobInput>) {
  const models = worker.models ? await worker.models(job) : [];
  return {
    object: "list",
    data: models.map((m) =>
      typeof m === "string"
        ? { id: m, object: "model", created: 0, owned_by: "flash-worker" }
        : { object: "model", created: 0, owned_by: "flash-worker", ...m },
    ),
  };
}

function answer(result: CompletionResult, stream: boolean, kind: Kind) {
  if (stream) return streamEvents(result, kind);
  return Promise.resolve(result).then((value) => (isChunks(value) ? joinChunks(value, kind) : value));
}

async function* streamEvents(result: CompletionResult, kind: Kind): AsyncGenerator<string> {
  const value = await result;
  if (isChunks(value)) {
    for await (const chunk of value) yield sseEvent(chunk);
  } else {
    yield sseEvent(asChunk(value, kind));
  }
  yield SSE_DONE;
}

/** A whole response as one streaming chunk: each choice's message becomes its delta. */
function asChunk(response: CompletionObject, kind: Kind): CompletionObject {
  if (kind === "text") return response;
  const choices = Array.isArray(response.choices) ? response.choices : [];
  return {
    ...response,
    object: "chat.completion.chunk",
    choices: choices.map((choice: unknown, i: number) => {
      const { message, ...rest } = isObject(choice) ? choice : {};
      const delta = isObject(message) ? { ...message } : {};
      // Streamed tool calls are matched by index; a whole response has none to carry.
      if (Array.isArray(delta.tool_calls)) {
        delta.tool_calls = delta.tool_calls.map((call: unknown, index: number) =>
          isObject(call) && call.index === undefined ? { index, ...call } : call,
        );
      }
      return { index: i, ...rest, delta };
    }),
  };
}

/** Joins streamed chunks into the response a non-streaming request expects. */
async function joinChunks(
  chunks: Iterable<CompletionObject> | AsyncIterable<CompletionObject>,
  kind: Kind,
): Promise<CompletionObject> {
  let head: CompletionObject | undefined;
  const choices = new Map<number, Record<string, unknown>>();
  let usage: unknown;
  for await (const chunk of chunks) {
    if (!isObject(chunk)) continue;
    head ??= chunk;
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage;
    for (const raw of Array.isArray(chunk.choices) ? chunk.choices : []) {
      if (!isObject(raw)) continue;
      const index = typeof raw.index === "number" ? raw.index : 0;
      let choice = choices.get(index);
      if (!choice) {
        choice =
          kind === "chat" ? { index, message: { role: "assistant", content: null } } : { index, text: "" };
        choices.set(index, choice);
      }
      if (raw.finish_reason !== undefined && raw.finish_reason !== null)
        choice.finish_reason = raw.finish_reason;
      if (raw.logprobs !== undefined) choice.logprobs = raw.logprobs;
      if (kind === "text") {
        if (typeof raw.text === "string") choice.text = `${choice.text as string}${raw.text}`;
      } else if (isObject(raw.delta)) {
        mergeDelta(choice.message as Record<string, unknown>, raw.delta);
      }
    }
  }
  const { choices: _, usage: __, ...fields } = head ?? {};
  const joined: CompletionObject = {
    ...fields,
    object: kind === "chat" ? "chat.completion" : "text_completion",
    choices: [...choices.values()]
      .sort((a, b) => (a.index as number) - (b.index as number))
      .map((c) => ({ finish_reason: null, ...c })),
  };
  if (usage !== undefined) joined.usage = usage;
  return joined;
}

function mergeDelta(message: Record<string, unknown>, delta: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(delta)) {
    if (value === undefined || value === null) continue;
    if (key === "tool_calls" && Array.isArray(value)) {
      mergeToolCalls(message, value);
    } else if (typeof value === "string" && key !== "role") {
      message[key] = typeof message[key] === "string" ? `${message[key] as string}${value}` : value;
    } else {
      message[key] = value;
    }
  }
}

/** Streamed tool calls arrive in pieces keyed by `index`: the id and name once, the arguments in parts. */
function mergeToolCalls(message: Record<string, unknown>, parts: unknown[]): void {
  if (!Array.isArray(message.tool_calls)) message.tool_calls = [];
  const calls = message.tool_calls as Record<string, unknown>[];
  for (const part of parts) {
    if (!isObject(part)) continue;
    const { index: rawIndex, function: fn, ...rest } = part;
    const index = typeof rawIndex === "number" ? rawIndex : calls.length;
    let call = calls[index];
    if (!call) {
      call = { type: "function", function: { name: "", arguments: "" } };
      calls[index] = call;
    }
    for (const [key, value] of Object.entries(rest)) if (value !== undefined) call[key] = value;
    if (isObject(fn)) {
      const target = call.function as Record<string, unknown>;
      for (const [key, value] of Object.entries(fn)) {
        if (key === "arguments" && typeof value === "string") {
          target.arguments = `${target.arguments as string}${value}`;
        } else if (value !== undefined) target[key] = value;
      }
    }
  }
}
