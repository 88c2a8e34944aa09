// The chat-completion adapter through the real job engine: what the worker would post for each route.
import { describe, expect, it } from "vitest";
import example from "../../../examples/openai-compatible/handler.js";
import {
  type CompatibleWorker,
  type CompletionObject,
  handler,
  type OpenAIJobInput,
  openaiCompatible,
} from "../../../src/index.js";
import { runJob } from "../../../src/testing/index.js";

const run = (worker: CompatibleWorker, input: unknown) =>
  runJob(handler(openaiCompatible(worker)), input as OpenAIJobInput);

type Chat = { choices: { message: Record<string, unknown> & { content: string } }[] };
const chatOutput = (out: { result?: { output?: unknown } }) => out.result?.output as Chat;

const chat = (openai_input: Record<string, unknown>) => ({
  openai_route: "/v1/chat/completions",
  openai_input,
});

/** The JSON objects inside SSE `data:` events, and whether the stream ended with [DONE]. */
function events(chunks: unknown[]): { objects: CompletionObject[]; done: boolean } {
  const text = chunks.join("");
  const data = text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice(6));
  return {
    objects: data.filter((d) => d !== "[DONE]").map((d) => JSON.parse(d) as CompletionObject),
    done: data.at(-1) === "[DONE]",
  };
}

const response: CompletionObject = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [
    {
      index: 0,
      finish_reason: "tool_calls",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' }, extra: 1 },
        ],
      },
    },
  ],
  system_fingerprint: "fp",
};

describe("openaiCompatible: routes from openai_route / openai_input", () => {
  it("passes a response object through untouched, tool calls included", async () => {
    let seen: unknown;
    const { result, isStream } = await run(
      {
        chatCompletions: (body) => {
          seen = body;
          return response;
        },
      },
      chat({ model: "m", messages: [{ role: "user", content: "hi" }], tools: [{ type: "function" }] }),
    );
    expect(isStream).toBe(false);
    expect(result).toEqual({ output: response });
    expect(seen).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      tools: [{ type: "function" }],
    });
  });

  it("stream: true sends each chunk as an SSE data event, then [DONE]", async () => {
    const chunks = [
      {
        id: "c",
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { role: "assistant", content: "" } }],
      },
      { id: "c", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: "he" } }] },
      {
        id: "c",
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { content: "llo" }, finish_reason: "stop" }],
      },
    ];
    const out = await run(
      {
        async *chatCompletions() {
          yield* chunks;
        },
      },
      chat({ messages: [], stream: true }),
    );
    expect(out.isStream).toBe(true);
    expect(out.chunks).toHaveLength(4);
    expect(out.chunks[0]).toBe(`data: ${JSON.stringify(chunks[0])}\n\n`);
    expect(events(out.chunks)).toEqual({ objects: chunks, done: true });
  });

  it("stream: true on a whole response sends it as one chunk, the message as the delta", async () => {
    const out = await run({ chatCompletions: async () => response }, chat({ messages: [], stream: true }));
    const { objects, done } = events(out.chunks);
    expect(done).toBe(true);
    expect(objects).toHaveLength(1);
    expect(objects[0]).toMatchObject({
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      system_fingerprint: "fp",
    });
    expect(objects[0]?.choices).toEqual([
      {
        index: 0,
        finish_reason: "tool_calls",
        delta: {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              index: 0,
              id: "call_a",
              type: "function",
              function: { name: "lookup", arguments: '{"q":"x"}' },
              extra: 1,
            },
          ],
        },
      },
    ]);
  });

  it("joins chunks into one response when the client did not ask to stream, tool-call pieces included", async () => {
    const out = await run(
      {
        *chatCompletions() {
          yield {
            id: "c",
            created: 5,
            model: "m",
            choices: [{ index: 0, delta: { role: "assistant", content: "" } }],
          };
          yield { id: "c", choices: [{ index: 0, delta: { content: "Let me " } }] };
          yield { id: "c", choices: [{ index: 0, delta: { content: "check." } }] };
          yield {
            id: "c",
            choices: [
              {
                index: 0,
                delta: {
                  tool_calls: [
                    { index: 0, id: "call_1", type: "function", function: { name: "f", arguments: "" } },
                  ],
                },
              },
            ],
          };
          yield {
            id: "c",
            choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] } }],
          };
          yield {
            id: "c",
            choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "1}" } }] } }],
          };
          yield {
            id: "c",
            choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }],
            usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
          };
        },
      },
      chat({ messages: [] }),
    );
    expect(out.isStream).toBe(false);
    expect(out.result).toEqual({
      output: {
        id: "c",
        created: 5,
        model: "m",
        object: "chat.completion",
        choices: [
          {
            index: 0,
            finish_reason: "tool_calls",
            message: {
              role: "assistant",
              content: "Let me check.",
              tool_calls: [{ id: "call_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }],
            },
          },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      },
    });
  });

  it("/v1/completions: text chunks join into a text_completion", async () => {
    const out = await run(
      {
        *completions(body) {
          yield { id: "t", choices: [{ index: 0, text: String(body.prompt) }] };
          yield { id: "t", choices: [{ index: 0, text: "!", finish_reason: "length" }] };
        },
      },
      { openai_route: "/v1/completions", openai_input: { prompt: "hey" } },
    );
    expect(out.result?.output).toEqual({
      id: "t",
      object: "text_completion",
      choices: [{ index: 0, text: "hey!", finish_reason: "length" }],
    });
  });

  it("/v1/models lists the worker's models as model objects", async () => {
    const out = await run(
      { models: () => ["a", { id: "b", owned_by: "me" }] },
      { openai_route: "/v1/models", openai_input: {} },
    );
    expect(out.result?.output).toEqual({
      object: "list",
      data: [
        { id: "a", object: "model", created: 0, owned_by: "flash-worker" },
        { id: "b", object: "model", created: 0, owned_by: "me" },
      ],
    });
  });

  it("accepts the route with or without /v1, and a bare chat body without openai_route", async () => {
    const worker = { chatCompletions: () => response };
    expect((await run(worker, { openai_route: "chat/completions" })).result?.output).toEqual(response);
    expect((await run(worker, { messages: [{ role: "user", content: "x" }] })).result?.output).toEqual(
      response,
    );
  });

  it("an unknown route, a missing implementation or a throw fails the job with a clear message", async () => {
    const unknown = await run({}, { openai_route: "/v1/embeddings" });
    expect(String(unknown.result?.error)).toContain(
      "Unknown openai_route '/v1/embeddings': expected /v1/chat/completions, /v1/completions, /v1/models",
    );
    const missing = await run({}, chat({ messages: [] }));
    expect(String(missing.result?.error)).toContain("This worker does not implement /v1/chat/completions");
    const thrown = await run(
      {
        chatCompletions: () => {
          throw new Error("model offline");
        },
      },
      chat({ messages: [] }),
    );
    expect(String(thrown.result?.error)).toContain("model offline");
  });
});

describe("examples/openai-compatible", () => {
  it("echoes the last user message, joined when not streaming", async () => {
    const out = await runJob(example, chat({ messages: [{ role: "user", content: "say this back" }] }));
    const output = out.result?.output as { choices: { message: { content: string } }[] };
    expect(output.choices[0]?.message.content).toBe("say this back");
  });

  it("streams the echo word by word", async () => {
    const out = await runJob(
      example,
      chat({ messages: [{ role: "user", content: "one two three" }], stream: true }),
    );
    const { objects, done } = events(out.chunks);
    expect(done).toBe(true);
    const content = objects
      .map((o) => (o.choices as { delta: { content?: string } }[])[0]?.delta.content ?? "")
      .join("");
    expect(content).toBe("one two three");
  });

  it("calls the first tool, then reports what it said", async () => {
    const tools = [{ type: "function", function: { name: "shout", parameters: { type: "object" } } }];
    const first = await runJob(example, chat({ messages: [{ role: "user", content: "hi" }], tools }));
    const message = chatOutput(first).choices[0]?.message;
    expect(message?.tool_calls).toEqual([
      { id: "call_0", type: "function", function: { name: "shout", arguments: '{"text":"hi"}' } },
    ]);
    const second = await runJob(
      example,
      chat({
        tools,
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: null, tool_calls: message?.tool_calls },
          { role: "tool", tool_call_id: "call_0", content: "HI" },
        ],
      }),
    );
    const answer = chatOutput(second).choices[0]?.message;
    expect(answer?.content).toBe("tool said: HI");
  });
});
