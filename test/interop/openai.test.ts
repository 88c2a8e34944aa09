// The `openai` npm client against the local platform's chat-completion-compatible base URL
// `/v2/<endpoint_id>/openai/v1`, with a real worker running examples/openai-compatible (npm run build first).
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log/index.js";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { ROOT } from "../process.js";
import { readDeltas } from "./chunks.js";

const ENDPOINT = "llm";
const TIMEOUT = 120_000;
const lines: string[] = [];

let platform: Platform;
let client: OpenAI;

beforeAll(async () => {
  platform = await startPlatform({
    apiKey: "openai-test-key",
    logger: createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } }),
    endpoints: [
      {
        id: ENDPOINT,
        name: "echo llm",
        file: "examples/openai-compatible/handler.ts",
        workers: [1, 1],
        cwd: ROOT,
      },
      {
        id: "down",
        name: "failing llm",
        file: "test/fixtures/openai-failing.ts",
        workers: [0, 1],
        cwd: ROOT,
      },
    ],
  });
  client = new OpenAI({
    apiKey: platform.apiKey,
    baseURL: `${platform.url}/v2/${ENDPOINT}/openai/v1`,
    maxRetries: 0,
    timeout: 60_000,
  });
}, TIMEOUT);

afterAll(async () => {
  await platform?.close();
}, TIMEOUT);

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: "function",
    function: {
      name: "shout",
      description: "Upper-cases text",
      parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    },
  },
];

describe("openai client → /v2/<id>/openai/v1 → job with openai_route/openai_input → worker", {
  timeout: TIMEOUT,
}, () => {
  it(
    "chat.completions.create returns the echoed last user message",
    async () => {
      const completion = await client.chat.completions.create({
        model: "flash-echo-1",
        messages: [
          { role: "system", content: "You echo." },
          { role: "user", content: "first" },
          { role: "assistant", content: "first" },
          { role: "user", content: "hello there" },
        ],
      });
      expect(completion.object).toBe("chat.completion");
      expect(completion.model).toBe("flash-echo-1");
      expect(completion.choices[0]?.message).toEqual({ role: "assistant", content: "hello there" });
      expect(completion.choices[0]?.finish_reason).toBe("stop");
      expect(completion.usage).toEqual({ prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 });
    },
    TIMEOUT,
  );

  it("stream: true delivers the answer as Server-Sent Events, chunk by chunk", async () => {
    const stream = await client.chat.completions.create({
      model: "flash-echo-1",
      messages: [{ role: "user", content: "stream these four words" }],
      stream: true,
    });
    const { deltas, finish } = await readDeltas(stream);
    expect(deltas).toEqual(["stream ", "these ", "four ", "words"]);
    expect(finish).toBe("stop");
  });

  it("a tool call comes back with its fields, and the tool's answer is used on the next turn", async () => {
    const first = await client.chat.completions.create({
      model: "flash-echo-1",
      messages: [{ role: "user", content: "make this loud" }],
      tools,
      tool_choice: "auto",
    });
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.tool_calls).toEqual([
      { id: "call_0", type: "function", function: { name: "shout", arguments: '{"text":"make this loud"}' } },
    ]);
    const call = choice.message.tool_calls![0]!;
    const second = await client.chat.completions.create({
      model: "flash-echo-1",
      tools,
      messages: [
        { role: "user", content: "make this loud" },
        choice.message,
        { role: "tool", tool_call_id: call.id, content: "MAKE THIS LOUD" },
      ],
    });
    expect(second.choices[0]?.message.content).toBe("tool said: MAKE THIS LOUD");
  });

  it("a streamed tool call arrives in pieces the client can join", async () => {
    const stream = await client.chat.completions.create({
      model: "flash-echo-1",
      messages: [{ role: "user", content: "hi" }],
      tools,
      stream: true,
    });
    let name = "";
    let args = "";
    let id: string | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      for (const part of chunk.choices[0]?.delta.tool_calls ?? []) {
        expect(part.index).toBe(0);
        id ??= part.id;
        name += part.function?.name ?? "";
        args += part.function?.arguments ?? "";
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect({ id, name, args: JSON.parse(args), finish }).toEqual({
      id: "call_0",
      name: "shout",
      args: { text: "hi" },
      finish: "tool_calls",
    });
  });

  it("models.list lists the worker's models", async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models).toEqual([{ id: "flash-echo-1", object: "model", created: 0, owned_by: "flash-worker" }]);
  });

  it("completions.create, with and without stream", async () => {
    const completion = await client.completions.create({ model: "flash-echo-1", prompt: "complete me" });
    expect(completion.choices[0]?.text).toBe("complete me");
    const stream = await client.completions.create({
      model: "flash-echo-1",
      prompt: "streamed",
      stream: true,
    });
    const texts: string[] = [];
    for await (const chunk of stream) texts.push(chunk.choices[0]?.text ?? "");
    expect(texts.join("")).toBe("streamed");
  });

  it("the requests ran as jobs on the endpoint", async () => {
    const health = (await (
      await fetch(`${platform.url}/v2/${ENDPOINT}/health`, {
        headers: { authorization: `Bearer ${platform.apiKey}` },
      })
    ).json()) as { jobs: { completed: number; failed: number } };
    expect(health.jobs.completed).toBeGreaterThanOrEqual(8);
    expect(health.jobs.failed).toBe(0);
  });

  it("a worker's error reaches the client as a server error with its message, streaming or not", async () => {
    const down = new OpenAI({
      apiKey: platform.apiKey,
      baseURL: `${platform.url}/v2/down/openai/v1`,
      maxRetries: 0,
    });
    const error = await down.chat.completions
      .create({ model: "down-1", messages: [{ role: "user", content: "hi" }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect((error as Error).message).toContain("model offline");
    const streamed = await down.chat.completions
      .create({ model: "down-1", messages: [{ role: "user", content: "hi" }], stream: true })
      .catch((err: unknown) => err);
    expect(streamed).toBeInstanceOf(OpenAI.InternalServerError);
    expect((streamed as Error).message).toBe("500 model offline");
  });

  it("a throw while streaming reaches the client as the same clean message, without the traceback", async () => {
    const down = new OpenAI({
      apiKey: platform.apiKey,
      baseURL: `${platform.url}/v2/down/openai/v1`,
      maxRetries: 0,
    });
    const parts: string[] = [];
    const error = await (async () => {
      const stream = await down.chat.completions.create({
        model: "broken-stream",
        messages: [{ role: "user", content: "hi" }],
        stream: true,
      });
      for await (const chunk of stream) parts.push(chunk.choices[0]?.delta.content ?? "");
    })().catch((err: unknown) => err);
    expect(parts).toEqual(["par"]);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toBe("stream broke");
    const whole = await down.chat.completions
      .create({ model: "broken-stream", messages: [{ role: "user", content: "hi" }] })
      .catch((err: unknown) => err);
    expect((whole as Error).message).toBe("500 stream broke");
  });

  it("a route the worker does not implement is not found (404), which clients do not retry", async () => {
    const down = new OpenAI({
      apiKey: platform.apiKey,
      baseURL: `${platform.url}/v2/down/openai/v1`,
      maxRetries: 2,
    });
    const before = platform.scheduler.jobs.size;
    const error = await down.completions
      .create({ model: "down-1", prompt: "hi" })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as Error).message).toBe("404 This worker does not implement /v1/completions");
    expect(platform.scheduler.jobs.size - before).toBe(1);
  });

  it("a wrong key is an authentication error; an unknown endpoint is not found", async () => {
    const wrongKey = new OpenAI({
      apiKey: "not-the-key",
      baseURL: `${platform.url}/v2/${ENDPOINT}/openai/v1`,
      maxRetries: 0,
    });
    await expect(wrongKey.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const unknown = new OpenAI({
      apiKey: platform.apiKey,
      baseURL: `${platform.url}/v2/nope/openai/v1`,
      maxRetries: 0,
    });
    const error = await unknown.chat.completions
      .create({ model: "x", messages: [{ role: "user", content: "hi" }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as Error).message).toContain("Endpoint nope not found");
  });
});
