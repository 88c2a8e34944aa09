// The OpenAI passthrough: a job whose input is {openai_route, openai_input} sent to the model server's route,
// a streamed answer relayed as stream chunks of raw SSE events (as worker-vllm yields them), one per event.
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
  const response = await server.fetch(route, {
    method: get ? "GET" : "POST",
    headers: get ? {} : { "content-type": "application/json" },
    ...(get ? {} : { body: JSON.stringify(body ?? {}) }),
  });
  if (!response.ok) {
    const text = await response.text();
    throw new ServerHttpError(
      response.status,
      `Model server answered ${response.status} on ${route}: ${errorMessage(text)}`,
    );
  }
  const type = response.headers.get("content-type") ?? "";
  if (type.startsWith("text/event-stream") && response.body) return sseEvents(server, response.body);
  const text = await response.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
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

/** Each complete SSE event as soon as it arrives; the body is cancelled if the job stops reading (cancel). */
async function* sseEvents(server: ModelServer, body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let pending = "";
  try {
    for (;;) {
      let step: Awaited<ReturnType<typeof reader.read>>;
      try {
        step = await reader.read();
      } catch (err) {
        throw (await server.exitError()) ?? err;
      }
      if (step.done) break;
      pending += decoder.decode(step.value, { stream: true }).replace(/\r\n/g, "\n");
      for (let end = pending.indexOf("\n\n"); end >= 0; end = pending.indexOf("\n\n")) {
        const event = pending.slice(0, end + 2);
        pending = pending.slice(end + 2);
        if (event.trim() !== "") yield event;
      }
    }
    if (pending.trim() !== "") yield `${pending.trimEnd()}\n\n`;
  } finally {
    // Cancel, the execution timeout, or a failed chunk post: the server sees the disconnect and stops generating.
    await reader.cancel().catch(() => {});
  }
}
