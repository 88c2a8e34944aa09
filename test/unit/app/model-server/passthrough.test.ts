// The OpenAI passthrough's streamed answers from a real HTTP server on 127.0.0.1: whatever line ends the
// server frames its SSE events with (LF, CRLF, CR), and however they are cut, each event is relayed once, LF-framed;
// a refusal fails the job carrying the server's status, content type and body.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { server as modelServer } from "../../../../src/app/model-server/declare.js";
import { ServerHttpError } from "../../../../src/app/model-server/errors.js";
import { openaiPassthrough } from "../../../../src/app/model-server/passthrough.js";
import { describeHandlerError, encodeHandlerError } from "../../../../src/job/errors.js";

let http: Server | undefined;
afterEach(async () => {
  http?.closeAllConnections();
  await new Promise<void>((r) => (http ? http.close(() => r()) : r()));
  http = undefined;
});

/** A stand-in model server whose chat route streams `parts`, each write flushed before the next. */
async function streaming(parts: string[]) {
  http = createServer(async (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const part of parts) {
      await new Promise<void>((resolve) => res.write(part, () => resolve()));
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.end();
  });
  await new Promise<void>((r) => http!.listen(0, "127.0.0.1", r));
  const port = (http.address() as AddressInfo).port;
  return modelServer({ command: "unused: the test serves the port itself", port, name: "stand-in" });
}

async function relayed(parts: string[]): Promise<string[]> {
  const model = await streaming(parts);
  const stream = (await openaiPassthrough(model, {
    openai_route: "/v1/chat/completions",
    openai_input: { messages: [], stream: true },
  })) as AsyncGenerator<string>;
  const events: string[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const CHUNKS = ['{"choices":[{"delta":{"content":"a"}}]}', '{"choices":[{"delta":{"content":"é"}}]}'];
const WANTED = [`data: ${CHUNKS[0]}\n\n`, `data: ${CHUNKS[1]}\n\n`, "data: [DONE]\n\n"];

describe("the passthrough's SSE relay", () => {
  for (const [name, end] of [
    ["CRLF", "\r\n"],
    ["CR", "\r"],
    ["LF", "\n"],
  ] as const) {
    it(`${name}-framed events, cut after a line end and inside "data:", are relayed one each`, async () => {
      const text = [...CHUNKS, "[DONE]"].map((data) => `data: ${data}${end}${end}`).join("");
      const cuts = [text.indexOf(end) + 1, text.indexOf("ata:", 10), text.length - 3];
      const parts = [0, ...cuts].map((from, i) => text.slice(from, [...cuts, text.length][i]));
      expect(await relayed(parts)).toStrictEqual(WANTED);
    });
  }

  it("keep-alive comments are no chunks; a last event without its blank line is relayed", async () => {
    expect(
      await relayed([": ping\r\n\r\n", `data: ${CHUNKS[0]}\r\n\r\n: ping\r\n\r\n`, "data: [DONE]"]),
    ).toStrictEqual([WANTED[0], WANTED[2]]);
  });
});

describe("the passthrough's refusals", () => {
  /** A stand-in model server whose chat route answers `status` with `body` as `type`. */
  async function refusing(status: number, type: string, body: string) {
    http = createServer((_req, res) => {
      res.writeHead(status, { "content-type": type });
      res.end(body);
    });
    await new Promise<void>((r) => http!.listen(0, "127.0.0.1", r));
    const port = (http.address() as AddressInfo).port;
    return modelServer({ command: "unused: the test serves the port itself", port, name: "stand-in" });
  }

  const chat = { openai_route: "/v1/chat/completions", openai_input: { messages: [] } };
  const worker = { hostname: "h", workerId: "w1" };

  it("a 400 throws a ServerHttpError carrying the status, content type and body, which the job's error keeps", async () => {
    const body =
      '{"error":{"message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}}';
    const model = await refusing(400, "application/json", body);
    const err = await openaiPassthrough(model, chat).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerHttpError);
    expect((err as ServerHttpError).message).toBe(
      "Model server answered 400 on /v1/chat/completions: max_tokens is too large",
    );
    expect((err as ServerHttpError).upstream).toEqual({ status: 400, contentType: "application/json", body });
    const encoded = JSON.parse(encodeHandlerError(describeHandlerError(err, worker))) as Record<
      string,
      unknown
    >;
    expect(encoded).toMatchObject({
      error_type: "<class 'ServerHttpError'>",
      upstream_status: 400,
      upstream_content_type: "application/json",
      upstream_body: body,
    });
  });

  it("a plain-text 503 keeps its text; an error without an answer gets no upstream fields", async () => {
    const model = await refusing(503, "text/plain; charset=utf-8", "overloaded\n");
    const err = await openaiPassthrough(model, chat).catch((e: unknown) => e);
    expect((err as ServerHttpError).upstream).toEqual({
      status: 503,
      contentType: "text/plain; charset=utf-8",
      body: "overloaded\n",
    });
    const plain = describeHandlerError(new Error("boom"), worker);
    expect(Object.keys(plain).filter((k) => k.startsWith("upstream"))).toEqual([]);
    const odd = Object.assign(new Error("odd"), { upstream: { status: "400", contentType: "x", body: "" } });
    expect(Object.keys(describeHandlerError(odd, worker)).filter((k) => k.startsWith("upstream"))).toEqual(
      [],
    );
  });
});
