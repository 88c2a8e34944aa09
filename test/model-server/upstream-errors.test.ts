// A model server's refusals reach the caller as the server sent them (issue 44, item 2): the openai client, with its
// default retries, gets BadRequestError/NotFoundError with the server's message through `flash dev`'s /openai/v1
// of a queue endpoint and through /lb/<id>/v1 of a load-balanced one, streamed or not, and the server sees one call;
// a 5xx stays a 5xx; an error event the server ends a begun stream with reaches the client; /runsync shows the
// job FAILED with the server's status and body. Needs dist/.
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FlashProcess, startFlash } from "../platform/cli.js";
import { eventually } from "../platform/helpers.js";
import { type Flash, flash, freePort } from "../process.js";

const TIMEOUT = 180_000;
const TOO_LARGE = (n: number) =>
  `'max_tokens' is too large: ${n}. This model's maximum context length is 4096 tokens.`;

/** Output lines of a `flash dev`, whichever helper started it. */
type Lines = () => readonly string[];

/**
 * How many times the server refused with `message`, counted once every earlier line is in: a marker request's own
 * line comes after them on the same pipe.
 */
async function refusals(client: OpenAI, lines: Lines, message: string, marker: string): Promise<number> {
  await client.chat.completions.create({
    model: "fixture-model",
    messages: [{ role: "user", content: marker }],
  });
  await eventually(
    () => lines().some((l) => l.includes(`chat completion: echo: ${marker}`)),
    "the marker request's line",
  );
  return lines().filter((l) => l.includes(`| refused 400: ${message}`)).length;
}

/** The refusals every passthrough must hand over unchanged, for a client made by `client`. */
function refusalsReachTheClient(client: () => OpenAI, lines: Lines): void {
  it("a 400 is BadRequestError with the server's message, the server called once (the client's retries on)", async () => {
    const err = await client()
      .chat.completions.create({
        model: "fixture-model",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 5001,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).status).toBe(400);
    expect((err as Error).message).toBe(`400 ${TOO_LARGE(5001)}`);
    expect((err as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({
      message: TOO_LARGE(5001),
      type: "BadRequestError",
      code: 400,
    });
    expect(await refusals(client(), lines, TOO_LARGE(5001), "after-plain-400")).toBe(1);
  });

  it("a streamed request the server refuses with 400 is BadRequestError too, before any chunk; one call", async () => {
    const err = await client()
      .chat.completions.create({
        model: "fixture-model",
        messages: [{ role: "user", content: "hi" }],
        max_tokens: 5002,
        stream: true,
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect((err as Error).message).toBe(`400 ${TOO_LARGE(5002)}`);
    expect(await refusals(client(), lines, TOO_LARGE(5002), "after-streamed-400")).toBe(1);
  });

  it("a 404 for an unknown model is NotFoundError with the server's message", async () => {
    const err = await client()
      .chat.completions.create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect((err as Error).message).toBe("404 The model `no-such-model` does not exist.");
  });

  it("the server's 500 stays a 500 with its own message", async () => {
    const err = await client()
      .withOptions({ maxRetries: 0 })
      .chat.completions.create({ model: "fixture-broken", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.InternalServerError);
    expect((err as Error).message).toBe("500 fixture: the engine is dead");
  });

  it("a stream the server fails after it began ends with its error event: the client has the token, then the error", async () => {
    const stream = await client().chat.completions.create({
      model: "fixture-fails-mid-stream",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    const deltas: string[] = [];
    const err = await (async () => {
      for await (const chunk of stream) deltas.push(chunk.choices[0]?.delta.content ?? "");
    })().catch((e: unknown) => e);
    expect(deltas.join("")).toBe("echo:");
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as Error).message).toBe("fixture: generation failed");
  });
}

describe("a queue endpoint's /openai/v1 hands over the model server's refusals", { timeout: TIMEOUT }, () => {
  let dev: FlashProcess;
  beforeAll(async () => {
    const saved = { ...process.env };
    Object.assign(process.env, { FIXTURE_PORT: String(await freePort()), FIXTURE_LOAD_SECONDS: "0.2" });
    try {
      dev = await startFlash("dev", [
        "test/fixtures/model-server/handler.ts",
        "--port",
        "0",
        "--api-key",
        "ue-key",
        "--workers",
        "1,1",
      ]);
    } finally {
      process.env = saved;
    }
  }, TIMEOUT);
  afterAll(async () => {
    await dev?.stop();
  }, TIMEOUT);

  refusalsReachTheClient(
    () => new OpenAI({ apiKey: dev.apiKey, baseURL: `${dev.endpointUrl}/openai/v1`, timeout: 60_000 }),
    () => dev.lines,
  );

  it("/runsync of the passthrough shows the job FAILED with the server's status and body", async () => {
    const job = await dev.call("/runsync", {
      input: {
        openai_route: "/v1/chat/completions",
        openai_input: { messages: [{ role: "user", content: "hi" }], max_tokens: 5003 },
      },
    });
    expect(job.status).toBe("FAILED");
    const error = JSON.parse(String(job.error)) as Record<string, unknown>;
    expect(error).toMatchObject({
      error_type: "<class 'ServerHttpError'>",
      error_message: `Model server answered 400 on /v1/chat/completions: ${TOO_LARGE(5003)}`,
      upstream_status: 400,
      upstream_content_type: "application/json",
    });
    expect(JSON.parse(String(error.upstream_body))).toEqual({
      error: { message: TOO_LARGE(5003), type: "BadRequestError", param: null, code: 400 },
    });
  });
});

describe("a load-balanced endpoint's /lb/<id>/v1 hands over the model server's refusals", {
  timeout: TIMEOUT,
}, () => {
  let dev: Flash;
  let base = "";
  beforeAll(async () => {
    dev = flash(["dev", "test/fixtures/model-server/endpoint.ts", "--port", "0", "--api-key", "ue-key"], {
      FIXTURE_PORT: String(await freePort()),
      FIXTURE_LOAD_SECONDS: "0.2",
    });
    const line = await dev.waitForLine(/is load-balanced endpoint "llm-proxy" at (http:\/\/\S+)/, 60_000);
    base = /(http:\/\/127\.0\.0\.1:\d+\/lb\/llm-proxy)/.exec(line)![1]!;
  }, TIMEOUT);
  afterAll(async () => {
    if (dev && dev.child.exitCode === null) {
      dev.child.kill("SIGINT");
      expect(await dev.exited).toBe(0);
    }
  }, TIMEOUT);

  refusalsReachTheClient(
    () => new OpenAI({ apiKey: "ue-key", baseURL: `${base}/v1`, timeout: 60_000 }),
    () => [...dev.stdout, ...dev.stderr],
  );
});
