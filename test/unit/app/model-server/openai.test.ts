// The OpenAI passthrough's streamed answers from a real HTTP server on 127.0.0.1: whatever line ends the
// server frames its SSE events with (LF, CRLF, CR), and however they are cut, each event is relayed once, LF-framed.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { server as modelServer } from "../../../../src/app/model-server/declare.js";
import { openaiPassthrough } from "../../../../src/app/model-server/openai.js";

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
