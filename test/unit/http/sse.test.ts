// readSse: events framed by LF, CRLF or CR, cut into chunks at every point (between CR and LF, inside a field
// name, inside a UTF-8 character), from a real HTTP server and from exact chunk lists; the per-event limit.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { isFlashError } from "../../../src/flash-error.js";
import { formatSse, readSse, SSE_EVENT_LIMIT_CHARS, type SseEvent } from "../../../src/http/sse.js";

/** The same three events in each framing: a typed one with an id, a multi-line one, one with a non-ASCII text. */
const EVENTS = [
  'event: log\nid: 7\ndata: {"a":1}\n\n',
  ": a comment\ndata: one\ndata: two\n\n",
  "data: é€😀\n\n",
];
const EXPECTED: SseEvent[] = [
  { event: "log", id: "7", data: '{"a":1}' },
  { event: undefined, id: undefined, data: "one\ntwo" },
  { event: undefined, id: undefined, data: "é€😀" },
];
const FRAMINGS = { LF: "\n", CRLF: "\r\n", CR: "\r" } as const;
const framed = (end: string) => EVENTS.join("").replaceAll("\n", end);

async function* chunks(parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* parts;
}

async function collect(body: AsyncIterable<Uint8Array>, limit?: number): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readSse(body, limit)) events.push(event);
  return events;
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

/** A server on 127.0.0.1 that writes `parts` one by one, each after the previous one was flushed. */
async function serve(parts: Uint8Array[]): Promise<string> {
  server = createServer(async (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const part of parts) {
      await new Promise<void>((resolve) => res.write(part, () => resolve()));
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.end();
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe("readSse", () => {
  for (const [name, end] of Object.entries(FRAMINGS)) {
    it(`${name}-framed events from a real server, one byte per write, are the events`, async () => {
      const bytes = Buffer.from(framed(end));
      const url = await serve([...bytes].map((b) => Uint8Array.of(b)));
      const response = await fetch(url);
      expect(await collect(response.body!)).toStrictEqual(EXPECTED);
    });

    it(`${name}-framed events cut in two at every byte are the same events`, async () => {
      const bytes = Buffer.from(framed(end));
      for (let cut = 0; cut <= bytes.length; cut++) {
        const events = await collect(chunks([bytes.subarray(0, cut), bytes.subarray(cut)]));
        expect(events, `cut at byte ${cut}`).toStrictEqual(EXPECTED);
      }
    });
  }

  it("mixed line ends in one stream, a CR and its LF in different chunks", async () => {
    const text = 'data: {"a":1}\r\n\r\ndata: b\r\rdata: c\n\n';
    const cut = text.indexOf("\r\n") + 1;
    const events = await collect(chunks([Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))]));
    expect(events.map((e) => e.data)).toStrictEqual(['{"a":1}', "b", "c"]);
  });

  it("an event the body ends without a blank line is handed over; a lone comment is no event", async () => {
    expect((await collect(chunks([Buffer.from(": hi\n\ndata: last")]))).map((e) => e.data)).toStrictEqual([
      "last",
    ]);
    expect(await collect(chunks([Buffer.from("data: x\r")]))).toStrictEqual([
      { event: undefined, id: undefined, data: "x" },
    ]);
  });

  it("an event that grows past the limit fails the stream as soon as it does, without reading on", async () => {
    let pulled = 0;
    async function* endless(): AsyncGenerator<Uint8Array> {
      yield Buffer.from("data: ok\n\n");
      // A line that never ends: 1 KiB per chunk, forever.
      for (;;) {
        pulled++;
        yield Buffer.alloc(1024, 0x61);
      }
    }
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const event of readSse(endless(), 10 * 1024)) seen.push(event.data);
    })().catch((err: unknown) => err);
    expect(seen).toStrictEqual(["ok"]);
    expect(isFlashError(failure, "SSE_EVENT_TOO_LARGE")).toBe(true);
    expect((failure as Error).message).toBe(
      "An SSE event grew past 10240 characters without ending (a blank line); the stream was cut off.",
    );
    // Refused on the chunk that crossed the limit: 10 KiB read, the 11th chunk the first one over.
    expect(pulled).toBe(11);
    // The default the docs state: 4 Mi characters.
    expect(SSE_EVENT_LIMIT_CHARS).toBe(4_194_304);
  });

  it("formatSse writes an event back as LF-framed text that reads as the same event", async () => {
    const text = EXPECTED.map(formatSse).join("");
    expect(text).toBe('event: log\nid: 7\ndata: {"a":1}\n\ndata: one\ndata: two\n\ndata: é€😀\n\n');
    expect(await collect(chunks([Buffer.from(text)]))).toStrictEqual(EXPECTED);
  });
});
