// A chat-completion-compatible worker: reached through {base}/v2/<endpoint_id>/openai/v1 by any client that
// takes a custom base URL. It answers deterministically: the last user message, echoed; with tools, it
// first calls the first tool, then reports what the tool said.
import {
  type ChatCompletionRequest,
  type ChatMessage,
  type CompletionObject,
  type CompletionRequest,
  handler,
  openaiCompatible,
} from "flash-worker";

const MODEL = "flash-echo-1";

function text(content: unknown): string {
  if (typeof content === "string") return content;
  // Content parts: [{type: "text", text}, ...]
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  }
  return "";
}

const lastOf = (messages: ChatMessage[], role: string) =>
  [...messages].reverse().find((m) => m.role === role);

/** Streams the answer as chunks; the runtime joins them for a request without `stream: true`. */
async function* chatCompletions(body: ChatCompletionRequest): AsyncGenerator<CompletionObject> {
  const base = {
    id: "chatcmpl-echo",
    object: "chat.completion.chunk",
    created: 0,
    model: body.model ?? MODEL,
  };
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, finish_reason }],
  });
  const tools = Array.isArray(body.tools) ? (body.tools as { function?: { name?: string } }[]) : [];
  const last = body.messages.at(-1);
  const toolName = tools[0]?.function?.name;
  if (toolName && body.tool_choice !== "none" && last?.role !== "tool") {
    // A tool call streams as its id and name first, then its arguments in pieces.
    const args = JSON.stringify({ text: text(lastOf(body.messages, "user")?.content) });
    const half = Math.floor(args.length / 2);
    yield chunk({
      role: "assistant",
      content: null,
      tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: toolName, arguments: "" } }],
    });
    yield chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(0, half) } }] });
    yield chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(half) } }] });
    yield chunk({}, "tool_calls");
    return;
  }
  const answer =
    last?.role === "tool" ? `tool said: ${text(last.content)}` : text(lastOf(body.messages, "user")?.content);
  yield chunk({ role: "assistant", content: "" });
  for (const piece of answer.split(/(?<= )/)) yield chunk({ content: piece });
  const words = answer.split(/\s+/).filter(Boolean).length;
  yield {
    ...chunk({}, "stop"),
    usage: { prompt_tokens: words, completion_tokens: words, total_tokens: 2 * words },
  };
}

/** A whole response at once; the runtime sends it as one chunk when the client streams. */
function completions(body: CompletionRequest): CompletionObject {
  const prompt = Array.isArray(body.prompt) ? String(body.prompt[0] ?? "") : String(body.prompt ?? "");
  return {
    id: "cmpl-echo",
    object: "text_completion",
    created: 0,
    model: body.model ?? MODEL,
    choices: [{ index: 0, text: prompt, finish_reason: "stop", logprobs: null }],
  };
}

export default handler(openaiCompatible({ chatCompletions, completions, models: () => [MODEL] }), {
  concurrency: 4,
});
