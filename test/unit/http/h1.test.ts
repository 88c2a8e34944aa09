// h1Transport against real servers on 127.0.0.1: raw `net` servers that write exact bytes (so the framing and the
// split points are the test's) and node:http servers; answers, kept-alive connections, broken answers, deadlines,
// aborts, the request head on the wire, TLS and IPv6. A fault here loses jobs, so most tests try to break it.
import { spawn } from "node:child_process";
import { getEventListeners, once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { describeFailure, neverSent } from "../../../src/http/client.js";
import { h1Transport } from "../../../src/http/h1.js";
import { MAX_HEAD_BYTES, MalformedAnswerError } from "../../../src/http/h1-answer.js";
import { nodeTransport, type WireRequest, WireTimeoutError } from "../../../src/http/wire.js";
import { closedPortUrl } from "../../client/servers.js";
import { runClient, selfSigned } from "./fixtures/tls.js";

const CLIENT = fileURLToPath(new URL("./fixtures/h1-client.ts", import.meta.url));

/** A request as a raw server read it off the wire. */
interface RawRequest {
  method: string;
  path: string;
  /** The head's bytes, request line to the last header line. */
  rawHead: Buffer;
  /** Header names in lower case, repeats joined. */
  headers: Record<string, string>;
  body: Buffer;
  /** Which of the server's connections it came on (0, 1, ...). */
  connection: number;
  socket: net.Socket;
}

interface RawServer {
  url: string;
  port: number;
  requests: RawRequest[];
  sockets: net.Socket[];
  close(): Promise<void>;
}

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()));
});

/** A raw server that writes the answer its table holds for each request's path, OK for any other. */
function answering(answers: Record<string, string>): ReturnType<typeof rawServer> {
  return rawServer((request) => {
    request.socket.write(answers[request.path] ?? OK);
  });
}

/** A TCP server that reads whole requests (head and Content-Length body) and lets `answer` write bytes back. */
async function rawServer(
  answer: (request: RawRequest) => void,
  options: { host?: string; port?: number; allowHalfOpen?: boolean } = {},
): Promise<RawServer> {
  const requests: RawRequest[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer({ allowHalfOpen: options.allowHalfOpen ?? false }, (socket) => {
    const connection = sockets.push(socket) - 1;
    socket.setNoDelay(true);
    socket.on("error", () => {}); // a client that drops a broken connection resets it
    let buffered = Buffer.alloc(0);
    socket.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const rawHead = Buffer.from(buffered.subarray(0, end));
        const [line = "", ...lines] = rawHead.toString("latin1").split("\r\n");
        const headers: Record<string, string> = {};
        for (const header of lines) {
          const colon = header.indexOf(":");
          const name = header.slice(0, colon).toLowerCase();
          const value = header.slice(colon + 1).trim();
          headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
        }
        const length = Number(headers["content-length"] ?? "0");
        if (buffered.length < end + 4 + length) return;
        const body = Buffer.from(buffered.subarray(end + 4, end + 4 + length));
        buffered = buffered.subarray(end + 4 + length);
        const [method = "", path = ""] = line.split(" ");
        const request = { method, path, rawHead, headers, body, connection, socket };
        requests.push(request);
        answer(request);
      }
    });
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const { port } = server.address() as net.AddressInfo;
  const handle: RawServer = {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    port,
    requests,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  open.push(handle);
  return handle;
}

/** A node:http server that counts its connections. */
async function nodeServer(
  handle: (request: http.IncomingMessage, response: http.ServerResponse) => void,
): Promise<{ url: string; connections: () => number; server: http.Server }> {
  let connections = 0;
  const server = http.createServer(handle);
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  open.push({
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connections: () => connections,
    server,
  };
}

/** Writes `bytes` cut at `cuts`, each piece in its own turn of the event loop so that the client reads them apart. */
async function writeInPieces(socket: net.Socket, bytes: Buffer, cuts: readonly number[]): Promise<void> {
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (cut <= from || cut > bytes.length) continue;
    await new Promise<void>((resolve) => socket.write(bytes.subarray(from, cut), () => resolve()));
    // Two turns of the loop, so that the client's read (in the poll phase between them) takes this piece alone.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    from = cut;
  }
}

/** Every cut of `bytes`: each byte its own write. */
function everyByte(bytes: Buffer): number[] {
  return Array.from({ length: bytes.length }, (_, i) => i + 1);
}

function get(url: string, more: Partial<WireRequest> = {}) {
  return h1Transport({ method: "GET", url, headers: {}, ...more });
}

/** What a rejected promise rejected with. */
async function failureOf(promise: Promise<unknown>): Promise<NodeJS.ErrnoException> {
  return promise.then(
    () => {
      throw new Error("expected the exchange to fail, it resolved");
    },
    (err: unknown) => err as NodeJS.ErrnoException,
  );
}

const OK = Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");

/** Answers `/bad` with `bad` (in pieces at `cuts`) and anything else with a plain 200 "ok". */
function badThenGood(bad: Buffer, cuts: number[] = []) {
  return (request: RawRequest) => {
    if (request.path === "/bad") void writeInPieces(request.socket, bad, cuts);
    else request.socket.write(OK);
  };
}

describe("h1Transport reads answers framed", () => {
  it("by Content-Length: empty, small, several MB, and multi-byte UTF-8 cut inside its characters", async () => {
    const big = "héllo wörld ✓ 🎉 ".repeat(300_000); // ~6.6 MB
    const bodies: Record<string, string> = {
      "/empty": "",
      "/small": "hi",
      "/big": big,
      "/utf8": "naïve ✓ 🎉 日本",
    };
    const server = await rawServer((request) => {
      const body = Buffer.from(bodies[request.path] ?? "");
      const head = Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
      const bytes = Buffer.concat([head, body]);
      // The UTF-8 answer goes out a byte at a time past its head: every character is cut somewhere.
      void writeInPieces(request.socket, bytes, request.path === "/utf8" ? everyByte(bytes) : []);
    });
    for (const path of Object.keys(bodies)) {
      const { response, text } = await get(`${server.url}${path}`);
      expect(response.status).toBe(200);
      expect(text.length).toBe(bodies[path]!.length);
      expect(text === bodies[path]).toBe(true);
    }
    // One connection carried all four.
    expect(server.sockets).toHaveLength(1);
  });

  it("chunked: several chunks, extensions, upper-case hex, trailers, the last chunk in a later write", async () => {
    const chunked = Buffer.from(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
        "5\r\nhello\r\n" +
        "1;a=b\r\n \r\n" +
        'A;name="quoted"\r\n0123456789\r\n' +
        "1B\r\n" +
        "x".repeat(27) +
        "\r\n" +
        "6\r\n✓✓\r\n" + // 6 bytes, 2 characters
        "0\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n",
    );
    const lastChunk = chunked.indexOf("0\r\nX-Trailer");
    const server = await rawServer((request) => {
      const cuts = request.path === "/bytes" ? everyByte(chunked) : [lastChunk, lastChunk + 1];
      void writeInPieces(request.socket, chunked, cuts);
    });
    const expected = `hello 0123456789${"x".repeat(27)}✓✓`;
    for (const path of ["/later", "/bytes", "/later"]) {
      const { response, text } = await get(`${server.url}${path}`);
      expect(response.status).toBe(200);
      expect(text).toBe(expected);
    }
    expect(server.sockets).toHaveLength(1);
  });

  it("until the connection closes: no length at all, and Connection: close; such a connection is not used again", async () => {
    const answers: Record<string, string> = {
      "/none": "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of ",
      "/close": "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of ",
      "/gzip": "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nall of ",
    };
    const server = await rawServer((request) => {
      void writeInPieces(request.socket, Buffer.from(`${answers[request.path]}it ✓`), [10, 40]).then(() =>
        request.socket.end(),
      );
    });
    for (const path of Object.keys(answers)) {
      const { response, text } = await get(`${server.url}${path}`);
      expect(response.status).toBe(200);
      expect(text).toBe("all of it ✓");
    }
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1, 2]);
  });

  it("by chunks only when chunked is the last coding, whole; otherwise until the connection closes", async () => {
    const body = "5\r\nhello\r\n0\r\n\r\n";
    const codings = ["gzip, chunked", "chunked, gzip", "xchunked", "chunkedx"];
    const server = await rawServer((request) => {
      const coding = codings[Number(request.path.slice(1))];
      request.socket.end(`HTTP/1.1 200 OK\r\nTransfer-Encoding: ${coding}\r\n\r\n${body}`);
    });
    const texts = [];
    for (const [index] of codings.entries()) {
      texts.push((await get(`${server.url}/${index}`)).text);
      await once(server.sockets[index]!, "close"); // the next request must not meet this closing connection
    }
    expect(texts).toEqual(["hello", body, body, body]);
  });

  it("with a head of 16,383 bytes as node:http counts them (reason, names, values), whole or split, trailers counted afresh; not a byte more", async () => {
    // Counted: "OK", "Content-Length", "2", "X-Big" and the value: 22 bytes and the value's.
    const headOf = (counted: number) =>
      `HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Big: ${"b".repeat(counted - 22)}`;
    // Counted afresh after the last chunk: "X-Trailer" and its value.
    const trailerOf = (counted: number) =>
      `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Trailer: ${"t".repeat(counted - 9)}`;
    const cases: Record<string, { bytes: Buffer; cuts: number[] }> = {};
    for (const counted of [MAX_HEAD_BYTES - 1, MAX_HEAD_BYTES]) {
      const head = headOf(counted);
      cases[`/head-whole-${counted}`] = { bytes: Buffer.from(`${head}\r\n\r\nok`), cuts: [] };
      cases[`/head-split-${counted}`] = { bytes: Buffer.from(`${head}\r\n\r\nok`), cuts: [40, head.length] };
      const trailer = trailerOf(counted);
      cases[`/trailer-${counted}`] = { bytes: Buffer.from(`${trailer}\r\n\r\n`), cuts: [trailer.length] };
    }
    const server = await rawServer((request) => {
      const { bytes, cuts } = cases[request.path]!;
      void writeInPieces(request.socket, bytes, cuts);
    });
    const outcomes: Record<string, string> = {};
    for (const path of Object.keys(cases)) {
      outcomes[path] = await get(`${server.url}${path}`).then(
        ({ text }) => text,
        (err: MalformedAnswerError) => `${err.code} ${err.llhttpCode}`,
      );
    }
    const overflow = "HTTP_MALFORMED_ANSWER HPE_HEADER_OVERFLOW";
    expect(outcomes).toEqual({
      "/head-whole-16383": "ok",
      "/head-split-16383": "ok",
      "/trailer-16383": "ok",
      "/head-whole-16384": overflow,
      "/head-split-16384": overflow,
      "/trailer-16384": overflow,
    });
  });

  it("204 and 304 carry no body whatever they say, nor does an answer to HEAD; the connection stays usable", async () => {
    const answers: Record<string, string> = {
      "/204": "HTTP/1.1 204 No Content\r\n\r\n",
      "/304": "HTTP/1.1 304 Not Modified\r\nContent-Length: 120\r\nETag: x\r\n\r\n",
      "/head": "HTTP/1.1 200 OK\r\nContent-Length: 50\r\nContent-Type: text/plain\r\n\r\n",
      "/head-chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    };
    const server = await answering(answers);
    for (const path of ["/204", "/304", "/head", "/head-chunked", "/ok"]) {
      const { response, text } = await h1Transport({
        method: path.startsWith("/head") ? "HEAD" : "GET",
        url: `${server.url}${path}`,
        headers: {},
      });
      expect(response.status).toBe(
        path === "/ok" ? 200 : path === "/304" ? 304 : path === "/204" ? 204 : 200,
      );
      expect(text).toBe(path === "/ok" ? "ok" : "");
    }
    expect(server.requests.map((r) => `${r.method} ${r.connection}`)).toEqual([
      "GET 0",
      "GET 0",
      "HEAD 0",
      "HEAD 0",
      "GET 0",
    ]);
  });

  it("skips a 100 Continue (and a 103 with headers) before the real answer, in the same write or a later one", async () => {
    const answers: Record<string, string[]> = {
      "/together": ["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone"],
      "/apart": ["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone"],
      "/early-hints": [
        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone",
      ],
    };
    const server = await rawServer((request) => {
      const parts = answers[request.path]!.map((part) => Buffer.from(part));
      const cuts = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).reduce((n, p) => n + p.length, 0));
      void writeInPieces(request.socket, Buffer.concat(parts), cuts);
    });
    for (const path of Object.keys(answers)) {
      const { response, text } = await h1Transport({
        method: "POST",
        url: `${server.url}${path}`,
        headers: {},
        body: "{}",
      });
      expect(response).toMatchObject({ status: 201, statusText: "Created", ok: true });
      expect(response.headers.get("link")).toBeNull();
      expect(text).toBe("done");
    }
    expect(server.sockets).toHaveLength(1);
  });

  it("reads status lines with a reason phrase, without one, and with an empty one; ok for 2xx only", async () => {
    const lines: Record<string, string> = {
      "/reason": "HTTP/1.1 503 Service Unavailable",
      "/spaces": "HTTP/1.1 418 I am a teapot",
      "/none": "HTTP/1.1 404",
      "/empty": "HTTP/1.1 200 ",
      "/old": "HTTP/1.0 202 Accepted",
      "/299": "HTTP/1.1 299 Odd",
      "/300": "HTTP/1.1 300 Multiple Choices",
      "/099": "HTTP/1.1 099 Odd", // a final answer below 100, as node:http reads it
    };
    const server = await rawServer((request) => {
      request.socket.write(`${lines[request.path]}\r\nContent-Length: 1\r\nConnection: keep-alive\r\n\r\nx`);
    });
    const seen: unknown[] = [];
    for (const path of Object.keys(lines)) {
      const { response, text } = await get(`${server.url}${path}`);
      seen.push([response.status, response.statusText, response.ok, text]);
      expect(response.headers.get("constructor")).toBeNull();
    }
    expect(seen).toEqual([
      [503, "Service Unavailable", false, "x"],
      [418, "I am a teapot", false, "x"],
      [404, "", false, "x"],
      [200, "", true, "x"],
      [202, "Accepted", true, "x"],
      [299, "Odd", true, "x"],
      [300, "Multiple Choices", false, "x"],
      [99, "Odd", false, "x"],
    ]);
  });

  it("joins repeated headers with ', ' and reads header names in any case (the answer's only) and values as latin1, as nodeTransport does", async () => {
    const server = await rawServer((request) => {
      request.socket.write(
        "HTTP/1.1 200 OK\r\nX-Twice: a\r\ncontent-TYPE: application/json\r\nx-twice: b\r\nX-TWICE:c\r\n" +
          "X-Spaces:   padded value \t\r\nX-Empty:\r\nX-Latin1: caf\xe9\r\nConstructor: c\r\nContent-Length: 2\r\n\r\n{}",
        "latin1",
      );
    });
    for (const transport of [h1Transport, nodeTransport]) {
      const { response } = await transport({ method: "GET", url: `${server.url}/`, headers: {} });
      // "constructor" is also a name on Object.prototype: only the answer's headers count.
      const names = [
        "constructor",
        "x-latin1",
        "x-twice",
        "X-Twice",
        "CONTENT-TYPE",
        "Content-Type",
        "x-spaces",
        "x-empty",
        "x-missing",
      ];
      expect(names.map((name) => response.headers.get(name))).toEqual([
        "c",
        "café",
        "a, b, c",
        "a, b, c",
        "application/json",
        "application/json",
        "padded value",
        "",
        null,
      ]);
    }
  });
});

describe("h1Transport on random answers (fast-check)", () => {
  it("returns exactly the body and status for any body, framing and cutting of the server's bytes", async () => {
    let next: { bytes: Buffer; cuts: number[]; close: boolean } | undefined;
    const server = await rawServer((request) => {
      if (request.path === "/again") {
        request.socket.write(OK);
        return;
      }
      const { bytes, cuts, close } = next!;
      void writeInPieces(request.socket, bytes, cuts).then(() => {
        if (close) request.socket.end();
      });
    });
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: "binary", maxLength: 300 }),
        fc.constantFrom("length", "chunked", "close", "close-header"),
        fc.constantFrom(200, 201, 400, 404, 500, 503),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        fc.record({
          upper: fc.boolean(),
          extension: fc.boolean(),
          trailers: fc.boolean(),
          early: fc.boolean(),
        }),
        async (body, framing, status, sizes, cutsAt, style) => {
          const payload = Buffer.from(body);
          let head = `${style.early ? "HTTP/1.1 100 Continue\r\n\r\n" : ""}HTTP/1.1 ${status} Whatever\r\n`;
          let framed: Buffer = payload;
          if (framing === "length") head += `Content-Length: ${payload.length}\r\n`;
          else if (framing === "close-header") head += "Connection: close\r\n";
          else if (framing === "chunked") {
            head += "Transfer-Encoding: chunked\r\n";
            const parts: Buffer[] = [];
            for (let at = 0, i = 0; at < payload.length; i++) {
              const size = Math.min(sizes[i % sizes.length]!, payload.length - at);
              const hex = style.upper ? size.toString(16).toUpperCase() : size.toString(16);
              parts.push(Buffer.from(`${hex}${style.extension ? ";x=y" : ""}\r\n`));
              parts.push(payload.subarray(at, at + size), Buffer.from("\r\n"));
              at += size;
            }
            parts.push(Buffer.from(style.trailers ? "0\r\nX-T: 1\r\n\r\n" : "0\r\n\r\n"));
            framed = Buffer.concat(parts);
          }
          const bytes = Buffer.concat([Buffer.from(`${head}\r\n`), framed]);
          const cuts = [...new Set(cutsAt.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
          const close = framing === "close" || framing === "close-header";
          next = { bytes, cuts, close };
          const before = server.requests.length;
          const { response, text } = await get(`${server.url}/random`);
          expect(response.status).toBe(status);
          expect(text).toBe(payload.toString("utf8"));
          const again = await get(`${server.url}/again`);
          expect(again.text).toBe("ok");
          const [first, second] = server.requests.slice(before);
          // Kept-alive framings carry the next request on the same connection; the others on a new one.
          if (close) expect(second!.connection).not.toBe(first!.connection);
          else expect(second!.connection).toBe(first!.connection);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("h1Transport on random requests (fast-check)", () => {
  it("sends any body as its UTF-8 bytes with their length, and any latin1 header value byte for byte", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    const latin1 = fc.string({
      unit: fc
        .oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff }), fc.constant(9))
        .map((code) => String.fromCharCode(code)),
      maxLength: 40,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.string({ unit: "binary", maxLength: 500 })),
        latin1,
        async (body, value) => {
          const before = server.requests.length;
          const { text } = await h1Transport({
            method: body === null ? "GET" : "POST",
            url: `${server.url}/r`,
            headers: { "X-Value": value },
            ...(body === null ? {} : { body }),
          });
          expect(text).toBe("ok");
          const [request] = server.requests.slice(before);
          const lines = request!.rawHead.toString("latin1").split("\r\n");
          expect(lines).toContain(`X-Value: ${value}`);
          expect(request!.body.equals(Buffer.from(body ?? ""))).toBe(true);
          expect(request!.headers["content-length"]).toBe(
            body === null ? undefined : String(Buffer.byteLength(body)),
          );
        },
      ),
      { numRuns: 150 },
    );
    expect(new Set(server.requests.map((r) => r.connection)).size).toBe(1);
  });
});

describe("h1Transport keeps connections", () => {
  it("sends sequential requests on one connection and concurrent ones on separate connections", async () => {
    let held: http.ServerResponse[] = [];
    const server = await nodeServer((request, response) => {
      if (request.url !== "/held") {
        response.end("ok");
        return;
      }
      held.push(response);
      // Answers the three held requests once all three are in: they cannot share a connection.
      if (held.length === 3) for (const r of held.splice(0)) r.end("held");
    });
    for (let i = 0; i < 3; i++) expect((await get(`${server.url}/`)).text).toBe("ok");
    expect(server.connections()).toBe(1);
    const answers = await Promise.all([0, 1, 2].map(() => get(`${server.url}/held`)));
    expect(answers.map((a) => a.text)).toEqual(["held", "held", "held"]);
    expect(server.connections()).toBe(3);
    held = [];
    // The three are kept now: three more concurrent requests open nothing new.
    for (let round = 0; round < 2; round++) {
      await Promise.all([0, 1, 2].map(() => get(`${server.url}/held`)));
      expect(server.connections()).toBe(3);
    }
  });

  it("does not reuse a connection after Connection: close, or after HTTP/1.0 without keep-alive", async () => {
    const answers: Record<string, string> = {
      "/close": "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
      "/close-listed": "HTTP/1.1 200 OK\r\nConnection: Upgrade, Close\r\nContent-Length: 2\r\n\r\nok",
      "/http10": "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
      "/http10-keep": "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
    };
    // The server keeps every connection open: only the client can decide not to reuse one.
    const server = await answering(answers);
    const connectionAfter = async (path: string) => {
      await get(`${server.url}${path}`);
      await get(`${server.url}/next`);
      const [first, second] = server.requests.slice(-2);
      return second!.connection === first!.connection ? "reused" : "new";
    };
    // The server keeps it open, so the client must close it itself.
    await get(`${server.url}/close`);
    const closed = once(server.sockets[0]!, "close");
    await get(`${server.url}/next`);
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1]);
    await closed;
    expect(await connectionAfter("/close-listed")).toBe("new");
    expect(await connectionAfter("/http10")).toBe("new");
    expect(await connectionAfter("/http10-keep")).toBe("reused");
  });

  it("heeds Keep-Alive: timeout=N: closes the idle connection itself a second early; a 1 s hint keeps none", async () => {
    const server = await rawServer((request) => {
      const hint = request.path === "/one" ? "timeout=1" : "timeout=2, max=100";
      request.socket.write(`HTTP/1.1 200 OK\r\nKeep-Alive: ${hint}\r\nContent-Length: 2\r\n\r\nok`);
    });
    await get(`${server.url}/one`);
    await get(`${server.url}/two`);
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1]);
    // The server never closes: the client ends connection 1 when its 1 s of idling (2 s less a second) is up.
    const ended = once(server.sockets[1]!, "end");
    await ended;
    await get(`${server.url}/two`);
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1, 2]);
  });

  it("closes an idle connection when its hint's time is up: a new hint sets a new time, a use pushes it back, a use in flight is left alone", async () => {
    // Fake timers: the test moves the clock, so "not closed yet" is a fact, not a race.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const hints: Record<string, string> = {
        "/t2": "timeout=2",
        "/t12": "timeout=12",
        "/held": "timeout=2",
      };
      let arrived: (socket: net.Socket) => void = () => {};
      const server = await rawServer((request) => {
        const hint = hints[request.path];
        const answer = `HTTP/1.1 200 OK\r\n${hint ? `Keep-Alive: ${hint}\r\n` : ""}Content-Length: 2\r\n\r\nok`;
        if (request.path === "/held") arrived(request.socket);
        else request.socket.write(answer);
      });
      const held = (socket: net.Socket) =>
        socket.write("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=2\r\nContent-Length: 2\r\n\r\nok");
      /** The connection a request to `path` went on. */
      const on = async (path: string) => {
        await get(`${server.url}${path}`);
        return server.requests.at(-1)!.connection;
      };
      // timeout=12 keeps it the default 4 s (capped), not 1 s less than 1 s.
      const first = await on("/t12");
      vi.advanceTimersByTime(3_999);
      expect(await on("/t12")).toBe(first);
      vi.advanceTimersByTime(4_000);
      const second = await on("/none");
      expect(second).not.toBe(first);
      // A shorter hint later: the connection goes after 1 s, not after the 4 s it had.
      expect(await on("/t2")).toBe(second);
      vi.advanceTimersByTime(1_000);
      const third = await on("/t2");
      expect(third).not.toBe(second);
      // A longer hint later: the 1 s it had no longer counts.
      expect(await on("/none")).toBe(third);
      vi.advanceTimersByTime(1_000);
      expect(await on("/t2")).toBe(third);
      // Each use of the same hint pushes its time back.
      vi.advanceTimersByTime(600);
      expect(await on("/t2")).toBe(third);
      vi.advanceTimersByTime(600);
      expect(await on("/t2")).toBe(third);
      // Its time runs out while a request is in flight on it: the request is answered, and then its time starts again.
      const inFlight = new Promise<net.Socket>((resolve) => {
        arrived = resolve;
      });
      const answer = get(`${server.url}/held`);
      const socket = await inFlight;
      vi.advanceTimersByTime(1_000);
      held(socket);
      expect((await answer).text).toBe("ok");
      expect(server.requests.at(-1)!.connection).toBe(third);
      vi.advanceTimersByTime(999);
      expect(await on("/t2")).toBe(third);
      vi.advanceTimersByTime(1_000);
      expect(await on("/t2")).not.toBe(third);
    } finally {
      vi.useRealTimers();
    }
  });

  it("spends a deadline with its exchange: an answered one closes nothing later, a failed one leaves no timer behind", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const server = await rawServer(
        badThenGood(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")),
      );
      // The worker's calls all carry a deadline: the exchange's own error comes back, not a timeout.
      const failure = await failureOf(get(`${server.url}/bad`, { timeoutMs: 1_000 }));
      expect({ code: failure.code, llhttpCode: (failure as MalformedAnswerError).llhttpCode }).toEqual({
        code: "HTTP_MALFORMED_ANSWER",
        llhttpCode: "HPE_INVALID_CONTENT_LENGTH",
      });
      // A deadline timer left running would hold the process up to timeoutMs.
      expect(vi.getTimerCount()).toBe(0);
      expect((await get(`${server.url}/ok`, { timeoutMs: 1_000 })).text).toBe("ok");
      vi.advanceTimersByTime(1_000);
      expect((await get(`${server.url}/ok`)).text).toBe("ok");
      expect(server.requests.map((r) => r.connection)).toEqual([0, 1, 1]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("with a signal and no deadline: waits as long as the answer takes, the abort still ends it, and no listener stays on the signal", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      let arrived: (socket: net.Socket) => void = () => {};
      const server = await rawServer((request) => {
        if (request.path === "/held") arrived(request.socket);
        else if (request.path === "/bad")
          request.socket.write("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n");
        else request.socket.write(OK);
      });
      const nextArrival = () =>
        new Promise<net.Socket>((resolve) => {
          arrived = resolve;
        });
      // One signal for many exchanges, as the worker's stop signal is.
      const controller = new AbortController();
      const { signal } = controller;
      let arrival = nextArrival();
      const answered = get(`${server.url}/held`, { signal });
      const socket = await arrival;
      vi.advanceTimersByTime(3_600_000);
      socket.write(OK);
      expect((await answered).text).toBe("ok");
      expect(getEventListeners(signal, "abort")).toHaveLength(0);
      expect((await failureOf(get(`${server.url}/bad`, { signal }))).code).toBe("HTTP_MALFORMED_ANSWER");
      expect(getEventListeners(signal, "abort")).toHaveLength(0);
      arrival = nextArrival();
      const aborted = get(`${server.url}/held`, { signal });
      await arrival;
      const reason = new Error("worker stopping");
      controller.abort(reason);
      await expect(aborted).rejects.toBe(reason);
    } finally {
      vi.useRealTimers();
    }
  });

  it("drops an idle connection that sends bytes nobody asked for: they are never read as the next answer", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    expect((await get(`${server.url}/first`)).text).toBe("ok");
    // A stray answer on the idle connection, after the client has taken its own.
    const socket = server.sockets[0]!;
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstray");
    await once(socket, "close"); // the client hung up on it
    expect((await get(`${server.url}/next`)).text).toBe("ok");
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1]);
  });

  it("delivers an answer followed in the same read by the start of another (as node:http does), and does not use that connection again", async () => {
    const server = await rawServer((request) => {
      request.socket.write(request.path === "/first" ? `${OK.toString("latin1")}\r\nHTTP/1.1 2` : OK);
    });
    expect((await get(`${server.url}/first`)).text).toBe("ok");
    expect((await get(`${server.url}/next`)).text).toBe("ok");
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1]);
  });

  it("keeps an idle connection that only sends CR and LF (llhttp skips them between answers)", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    expect((await get(`${server.url}/first`)).text).toBe("ok");
    const socket = server.sockets[0]!;
    await new Promise<void>((resolve) => socket.write("\r\n\n", () => resolve()));
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect((await get(`${server.url}/next`)).text).toBe("ok");
    expect(server.requests.map((r) => r.connection)).toEqual([0, 0]);
  });

  it("drops an idle connection the server closes, and the next request opens a new one", async () => {
    // Half-open: the server's FIN goes out, and the client's FIN back shows it has seen it.
    const server = await rawServer((request) => request.socket.write(OK), { allowHalfOpen: true });
    expect((await get(`${server.url}/a`)).text).toBe("ok");
    const socket = server.sockets[0]!;
    const clientEnded = once(socket, "end");
    socket.end();
    await clientEnded;
    expect((await get(`${server.url}/b`)).text).toBe("ok");
    expect(server.requests.map((r) => r.connection)).toEqual([0, 1]);
  });

  it("keeps a process alive while a request on a kept connection is in flight, and not once it is idle", async () => {
    let answered = 0;
    // The second answer comes late: a kept (unreferenced) connection must hold the process again while it waits.
    const server = await nodeServer((_request, response) => {
      if (answered++ === 0) response.end("bye");
      else setTimeout(() => response.end("bye"), 300);
    });
    server.server.keepAliveTimeout = 60_000;
    const child = spawn(process.execPath, ["--import", "tsx", CLIENT, `${server.url}/`, "2", "no-deadline"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString("utf8");
    });
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(0);
    const result = JSON.parse(out) as { answers: unknown[]; resources: string[] };
    expect(result.answers).toEqual([
      { status: 200, text: "bye" },
      { status: 200, text: "bye" },
    ]);
    expect(server.connections()).toBe(1);
    // Right after its last answer, nothing of the transport's holds the event loop: no socket, no timer.
    expect(result.resources.filter((r) => r === "TCPSocketWrap" || r === "Timeout")).toEqual([]);
  });
});

describe("h1Transport fails", () => {
  it("on a refused connection with ECONNREFUSED, which the client knows was never sent", async () => {
    const url = await closedPortUrl();
    const failure = await failureOf(get(`${url}/x`));
    expect(failure.code).toBe("ECONNREFUSED");
    expect(neverSent(failure)).toBe(true);
    expect(describeFailure(failure)).toContain("ECONNREFUSED");
  });

  it("with ECONNRESET 'socket hang up' when the server closes before, within or after the head, or within the body", async () => {
    const cutOff: Record<string, string> = {
      "/nothing": "",
      "/mid-status": "HTTP/1.1 20",
      "/mid-head": "HTTP/1.1 200 OK\r\nContent-Len",
      "/after-head": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
      "/mid-length-body": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345",
      "/mid-chunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
      "/before-last-chunk": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
      "/mid-trailers": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n",
      "/after-continue": "HTTP/1.1 100 Continue\r\n\r\n",
    };
    const server = await rawServer((request) => {
      const bytes = cutOff[request.path];
      if (bytes === undefined) request.socket.write(OK);
      else void writeInPieces(request.socket, Buffer.from(bytes), [3]).then(() => request.socket.end());
    });
    for (const path of Object.keys(cutOff)) {
      const failure = await failureOf(get(`${server.url}${path}`));
      expect({ path, code: failure.code, message: failure.message }).toEqual({
        path,
        code: "ECONNRESET",
        message: "socket hang up",
      });
      expect(neverSent(failure)).toBe(false);
    }
    // A reset (RST, not FIN) mid-body is a failure too.
    const reset = await rawServer((request) => {
      request.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n123", () =>
        request.socket.resetAndDestroy(),
      );
    });
    expect((await failureOf(get(`${reset.url}/`))).code).toBe("ECONNRESET");
    expect((await get(`${server.url}/ok`)).text).toBe("ok");
  });

  /** Each malformed answer, and llhttp's code and reason for it, which the message names (the worker logs it). */
  const malformed: Record<string, { answer: string; llhttp: string; reason: string }> = {
    "status line": {
      answer: "HTTP/1.1 OK 200\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_STATUS",
      reason: "Invalid status code",
    },
    protocol: {
      answer: "HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_VERSION",
      reason: "Expected dot",
    },
    "an unknown version": {
      answer: "HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_VERSION",
      reason: "Invalid HTTP version",
    },
    "bytes before the status line": {
      answer: "xHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_CONSTANT",
      reason: "Expected HTTP/",
    },
    "a four-digit status": {
      answer: "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_STATUS",
      reason: "Invalid response status",
    },
    "a status line ended by LF alone": {
      answer: "HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_CR_EXPECTED",
      reason: "Missing expected CR after response line",
    },
    "header line": {
      answer: "HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_HEADER_TOKEN",
      reason: "Invalid header token",
    },
    "header line without a name": {
      answer: "HTTP/1.1 200 OK\r\n: x\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_HEADER_TOKEN",
      reason: "Invalid header token",
    },
    "a space before the colon": {
      answer: "HTTP/1.1 200 OK\r\nBad Name: x\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_HEADER_TOKEN",
      reason: "Invalid header token",
    },
    "a header line ended by LF alone": {
      answer: "HTTP/1.1 200 OK\r\nX-A: a\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_CR_EXPECTED",
      reason: "Missing expected CR after header value",
    },
    "a bare CR in a value": {
      answer: "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_LF_EXPECTED",
      reason: "Missing expected LF after header value",
    },
    "a NUL in a value": {
      answer: "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_HEADER_TOKEN",
      reason: "Invalid header value char",
    },
    "a folded header line": {
      answer: "HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_INVALID_HEADER_TOKEN",
      reason: "Unexpected whitespace after header value",
    },
    "chunk size": {
      answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n",
      llhttp: "HPE_INVALID_CHUNK_SIZE",
      reason: "Invalid character in chunk size",
    },
    "chunk size past 64 bits": {
      answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nok\r\n0\r\n\r\n",
      llhttp: "HPE_INVALID_CHUNK_SIZE",
      reason: "Chunk size overflow",
    },
    "a chunk size line ended by LF alone": {
      answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\n0\n\n",
      llhttp: "HPE_CR_EXPECTED",
      reason: "Missing expected CR after chunk size",
    },
    "chunk without its CRLF": {
      answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n",
      llhttp: "HPE_STRICT",
      reason: "Expected LF after chunk data",
    },
    "a trailer over 16 KiB, no end in sight": {
      answer: `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Big: ${"b".repeat(20 * 1024)}`,
      llhttp: "HPE_HEADER_OVERFLOW",
      reason: "Header overflow",
    },
    "conflicting Content-Length values": {
      answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
      llhttp: "HPE_UNEXPECTED_CONTENT_LENGTH",
      reason: "Duplicate Content-Length",
    },
    "Content-Length repeated with the same value (RFC 9110 §8.6 allows it; llhttp does not)": {
      answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
      llhttp: "HPE_UNEXPECTED_CONTENT_LENGTH",
      reason: "Duplicate Content-Length",
    },
    "Content-Length list": {
      answer: "HTTP/1.1 200 OK\r\nContent-Length: 2 ,2\r\n\r\nok",
      llhttp: "HPE_INVALID_CONTENT_LENGTH",
      reason: "Invalid character in Content-Length",
    },
    "negative Content-Length": {
      answer: "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok",
      llhttp: "HPE_INVALID_CONTENT_LENGTH",
      reason: "Invalid character in Content-Length",
    },
    "Content-Length past 64 bits": {
      answer: "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\nok",
      llhttp: "HPE_INVALID_CONTENT_LENGTH",
      reason: "Content-Length overflow",
    },
    "Content-Length beside chunked": {
      answer:
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
      llhttp: "HPE_INVALID_TRANSFER_ENCODING",
      reason: "Transfer-Encoding can't be present with Content-Length",
    },
    "bytes after the answer that cannot start another, in the same read": {
      answer: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokAND MORE",
      llhttp: "HPE_INVALID_CONSTANT",
      reason: "Expected HTTP/",
    },
    "data after the last chunk": {
      answer: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nXY",
      llhttp: "HPE_INVALID_CONSTANT",
      reason: "Expected HTTP/",
    },
    "data after Connection: close": {
      answer: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n\r\n",
      llhttp: "HPE_CLOSED_CONNECTION",
      reason: "Data after `Connection: close`",
    },
    "101 to an upgrade": {
      answer: "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: x\r\n\r\n",
      llhttp: "HPE_PAUSED_UPGRADE",
      reason: "101 Switching Protocols to an upgrade nobody asked for",
    },
    "head over 16 KiB": {
      answer: `HTTP/1.1 200 OK\r\nX-Big: ${"b".repeat(16 * 1024)}\r\nContent-Length: 2\r\n\r\nok`,
      llhttp: "HPE_HEADER_OVERFLOW",
      reason: "Header overflow",
    },
    "head over 16 KiB, no end in sight": {
      answer: `HTTP/1.1 200 OK\r\nX-Big: ${"b".repeat(20 * 1024)}`,
      llhttp: "HPE_HEADER_OVERFLOW",
      reason: "Header overflow",
    },
  };
  for (const [what, { answer, llhttp, reason }] of Object.entries(malformed)) {
    it(`on a malformed answer (${what}), with llhttp's reason, and the next request goes on a fresh connection`, async () => {
      const bytes = Buffer.from(answer);
      // In pieces, so a parser that only looks at whole writes cannot pass.
      const server = await rawServer(badThenGood(bytes, [5, Math.floor(bytes.length / 2), bytes.length - 1]));
      const failure = await failureOf(get(`${server.url}/bad`));
      expect(failure).toBeInstanceOf(MalformedAnswerError);
      expect({ code: failure.code, llhttp: (failure as unknown as MalformedAnswerError).llhttpCode }).toEqual(
        {
          code: "HTTP_MALFORMED_ANSWER",
          llhttp,
        },
      );
      expect(failure.message.startsWith(`malformed HTTP answer: ${reason} (${llhttp})`)).toBe(true);
      expect(neverSent(failure)).toBe(false);
      expect((await get(`${server.url}/good`)).text).toBe("ok");
      expect(server.requests.map((r) => r.connection)).toEqual([0, 1]);
    });
  }

  it("at timeoutMs with a TimeoutError, whether the head or the body stalls; that connection is closed", async () => {
    const server = await rawServer((request) => {
      if (request.path === "/stall-body")
        request.socket.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12");
      else if (request.path !== "/stall-head") request.socket.write(OK);
    });
    for (const [index, path] of ["/stall-head", "/stall-body"].entries()) {
      const failure = await failureOf(get(`${server.url}${path}`, { timeoutMs: 50 }));
      expect(failure).toBeInstanceOf(WireTimeoutError);
      expect(failure).toMatchObject({ name: "TimeoutError", message: "no answer within 50 ms" });
      expect(neverSent(failure)).toBe(false);
      await once(server.sockets[index]!, "close"); // the client hung up on it
      expect((await get(`${server.url}/ok`, { timeoutMs: 5_000 })).text).toBe("ok");
    }
    expect(server.requests.map((r) => `${r.path} ${r.connection}`)).toEqual([
      "/stall-head 0",
      "/ok 1",
      "/stall-body 1",
      "/ok 2",
    ]);
  });

  it("with the signal's reason when aborted before or during the exchange; an aborted exchange's connection is closed", async () => {
    const server = await rawServer((request) => {
      if (request.path !== "/held") request.socket.write(OK);
    });
    const before = new Error("stopped before");
    await expect(get(`${server.url}/x`, { signal: AbortSignal.abort(before) })).rejects.toBe(before);
    await expect(get(`${server.url}/x`, { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError",
    });
    const controller = new AbortController();
    const pending = get(`${server.url}/held`, { signal: controller.signal, timeoutMs: 10_000 });
    await expect.poll(() => server.requests.length).toBe(1);
    const during = new Error("worker stopping");
    controller.abort(during);
    await expect(pending).rejects.toBe(during);
    await once(server.sockets[0]!, "close");
    // The signal is spent and the exchange over: a later request with a fresh one runs on a new connection.
    expect((await get(`${server.url}/ok`, { signal: new AbortController().signal })).text).toBe("ok");
    expect(server.requests.map((r) => `${r.path} ${r.connection}`)).toEqual(["/held 0", "/ok 1"]);
  });

  it("refuses header values with CR, LF, NUL, DEL or past latin1, bad header names and methods, as node:http does, sending nothing", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    const compare = async (request: WireRequest) => {
      const ours = await failureOf(h1Transport(request));
      const node = await failureOf(nodeTransport(request));
      expect(ours).toBeInstanceOf(TypeError);
      expect({ code: ours.code, message: ours.message }).toEqual({ code: node.code, message: node.message });
      expect(ours.code).toMatch(/^ERR_INVALID_(CHAR|HTTP_TOKEN)$/);
    };
    const bad: Record<string, string>[] = [
      { "X-Evil": "a\r\nX-Injected: 1" },
      { "X-Evil": "a\nb" },
      { "X-Evil": "a\rb" },
      { "X-Evil": "a\u0000b" },
      { "X-Evil": "a\u007fb" },
      { "X-Evil": "check ✓" },
      { "Bad Name": "x" },
      { "X-Bad\r\nName": "x" },
      { "": "x" },
    ];
    for (const headers of bad) {
      const request = { method: "POST", url: `${server.url}/x`, headers, body: "{}" };
      await compare(request);
    }
    // A method that could split the request, too.
    for (const method of ["GE T", "GET /x HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET", "GET\u0000"]) {
      await compare({ method, url: `${server.url}/x`, headers: {} });
    }
    expect((await get(`${server.url}/ok`)).text).toBe("ok");
    expect(server.requests.map((r) => r.path)).toEqual(["/ok"]);
    // A tab is allowed in a value, as node:http allows it.
    expect((await get(`${server.url}/tab`, { headers: { "X-Tab": "a\tb" } })).text).toBe("ok");
    expect(server.requests[1]!.headers["x-tab"]).toBe("a\tb");
  });
});

describe("h1Transport puts on the wire", () => {
  it("to a *.localhost host on 127.0.0.1, with the name in Host, as nodeTransport does", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    const url = `http://pod-1.localhost:${server.port}/ping`;
    expect((await get(url)).text).toBe("ok");
    expect((await nodeTransport({ method: "GET", url, headers: {} })).text).toBe("ok");
    expect(server.requests.map((r) => r.headers.host)).toEqual([
      `pod-1.localhost:${server.port}`,
      `pod-1.localhost:${server.port}`,
    ]);
  });

  it("the request line with path and query, Host with its port, Connection: keep-alive, the headers and a byte length", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    const body = JSON.stringify({ word: "naïve ✓ 🎉" });
    await h1Transport({
      method: "POST",
      url: `${server.url}/v2/job-done/w1/j-1?gpu=A100&isStream=false`,
      headers: { Authorization: "key", "Content-Type": "application/json", "X-Request-ID": "r-1" },
      body,
    });
    const [request] = server.requests;
    const lines = request!.rawHead.toString("latin1").split("\r\n");
    expect(lines[0]).toBe("POST /v2/job-done/w1/j-1?gpu=A100&isStream=false HTTP/1.1");
    expect(request!.headers).toEqual({
      host: `127.0.0.1:${server.port}`,
      connection: "keep-alive",
      authorization: "key",
      "content-type": "application/json",
      "x-request-id": "r-1",
      "content-length": String(Buffer.byteLength(body)),
    });
    expect(Buffer.byteLength(body)).toBeGreaterThan(body.length);
    expect(request!.body.toString("utf8")).toBe(body);
    // The caller's header names go out as written.
    expect(lines).toContain("X-Request-ID: r-1");
    // A GET sends no body and no Content-Length.
    await get(`${server.url}/v2/job-take/w1?job_in_progress=0`);
    expect(server.requests[1]!.rawHead.toString("latin1")).toBe(
      `GET /v2/job-take/w1?job_in_progress=0 HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: keep-alive`,
    );
    expect(server.requests[1]!.body.length).toBe(0);
  });

  it("Host without a port on the scheme's default port", async (context) => {
    const server = await rawServer((request) => request.socket.write(OK), { port: 80 }).catch(
      (err: NodeJS.ErrnoException) => err,
    );
    if (server instanceof Error) {
      context.skip(`port 80 cannot be listened on here (${server.code})`);
      return;
    }
    await get("http://127.0.0.1/x");
    await get("http://127.0.0.1:80/y");
    expect(server.requests.map((r) => r.headers.host)).toEqual(["127.0.0.1", "127.0.0.1"]);
  });

  it("a header value in latin1 as node:http sends it, with or without a body (the body in UTF-8)", async () => {
    const server = await rawServer((request) => request.socket.write(OK));
    const headers = { "X-Name": "café ÿ" };
    await h1Transport({ method: "GET", url: `${server.url}/x`, headers });
    await nodeTransport({ method: "GET", url: `${server.url}/x`, headers });
    await h1Transport({ method: "POST", url: `${server.url}/x`, headers, body: "ü ✓" });
    const valueBytes = server.requests.map((r) => {
      const head = Buffer.concat([r.rawHead, Buffer.from("\r\n")]);
      const at = head.indexOf("X-Name: ") + "X-Name: ".length;
      return head.subarray(at, head.indexOf("\r\n", at)).toString("hex");
    });
    // (node:http itself sends the head in UTF-8 when it shares a write with a string body; latin1 is what servers read.)
    const latin1 = Buffer.from("café ÿ", "latin1").toString("hex");
    expect(valueBytes).toEqual([latin1, latin1, latin1]);
    expect(server.requests[2]!.body.toString("utf8")).toBe("ü ✓");
    expect(server.requests[2]!.headers["content-length"]).toBe(String(Buffer.byteLength("ü ✓")));
    // A node:http server reads back the value the caller set.
    const seen: unknown[] = [];
    const reader = await nodeServer((request, response) => {
      seen.push(request.headers["x-name"]);
      request.resume();
      request.on("end", () => response.end());
    });
    await h1Transport({ method: "GET", url: `${reader.url}/x`, headers });
    await h1Transport({ method: "POST", url: `${reader.url}/x`, headers, body: "ü ✓" });
    expect(seen).toEqual(["café ÿ", "café ÿ"]);
  });

  it("what node:http sends when the caller sets Host, Content-Length, Connection or Transfer-Encoding itself, or a lower-case method", async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = await nodeServer((request, response) => {
      seen.push(request.headers);
      request.resume();
      request.on("end", () => response.end("fine"));
    });
    const cases: Record<string, string>[] = [
      { Host: "platform.example:1234" },
      { "content-length": "2" },
      { Connection: "close" },
      { "Transfer-Encoding": "chunked" },
    ];
    for (const headers of cases) {
      const { response, text } = await h1Transport({
        method: "POST",
        url: `${server.url}/p`,
        headers,
        body: "{}",
      });
      expect(response.status).toBe(200);
      expect(text).toBe("fine");
    }
    expect(seen[0]!.host).toBe("platform.example:1234");
    expect(seen[1]!["content-length"]).toBe("2");
    expect(seen[2]!.connection).toBe("close");
    expect(seen[3]!["transfer-encoding"]).toBe("chunked");
    // A lower-case method goes out upper-cased, as node:http sends it.
    const methods: string[] = [];
    server.server.on("request", (request: http.IncomingMessage) => methods.push(request.method ?? ""));
    expect(
      (await h1Transport({ method: "post", url: `${server.url}/p`, headers: {}, body: "{}" })).text,
    ).toBe("fine");
    expect(methods).toEqual(["POST"]);
  });
});

describe("h1Transport over TLS", () => {
  it("offers http/1.1 by ALPN and the host's name by SNI (no SNI for an IP), and refuses an untrusted certificate", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-h1-tls-"));
    try {
      const hellos: { servername: string | false; protocols: string[] }[] = [];
      const server = tls.createServer({
        ...selfSigned(dir),
        // What the client's hello offered, read before the client sees (and refuses) the certificate.
        ALPNCallback: ({ servername, protocols }) => {
          hellos.push({ servername, protocols });
          return protocols[0];
        },
      });
      server.on("tlsClientError", () => {});
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
      const { port } = server.address() as net.AddressInfo;
      for (const host of ["api.localhost", "127.0.0.1"]) {
        const failure = await failureOf(get(`https://${host}:${port}/x`));
        expect(failure.code).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
      }
      expect(hellos).toEqual([
        { servername: "api.localhost", protocols: ["http/1.1"] },
        { servername: false, protocols: ["http/1.1"] },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reaches an https server whose CA is trusted, on one kept-alive connection", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-h1-tls-"));
    try {
      selfSigned(dir);
      let connections = 0;
      const server = https.createServer(
        { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) },
        (request, response) => response.end(`secure ${request.url}`),
      );
      server.on("secureConnection", () => connections++);
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      open.push({
        close: () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      });
      const url = `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/tls`;
      const run = (env: Record<string, string>) =>
        runClient<{ answers?: unknown[]; error?: string }>(CLIENT, [url, "3"], env);
      const [untrusted, trusted] = await Promise.all([
        run({}),
        run({ NODE_EXTRA_CA_CERTS: join(dir, "cert.pem") }),
      ]);
      expect(untrusted.error).toBe("DEPTH_ZERO_SELF_SIGNED_CERT");
      expect(trusted.answers).toEqual([0, 1, 2].map(() => ({ status: 200, text: "secure /tls" })));
      // The untrusted client's handshake failed, so only the trusted one's connection counts.
      expect(connections).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("h1Transport resumes TLS sessions", () => {
  it("offers the session an origin gave on its next connection, which the server resumes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flash-h1-tls-"));
    try {
      const resumed: boolean[] = [];
      const server = https.createServer(selfSigned(dir), (request, response) =>
        response.end(`secure ${request.url}`),
      );
      server.on("secureConnection", (socket: tls.TLSSocket) => {
        socket.once("data", () => resumed.push(socket.isSessionReused()));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      open.push({
        close: () =>
          new Promise<void>((resolve) => {
            server.closeAllConnections();
            server.close(() => resolve());
          }),
      });
      const url = `https://127.0.0.1:${(server.address() as net.AddressInfo).port}/again`;
      const answer = await runClient<{ answers?: unknown[] }>(CLIENT, [url, "3", "then-at-once"], {
        NODE_EXTRA_CA_CERTS: join(dir, "cert.pem"),
      });
      expect(answer.answers).toEqual([0, 1, 2].map(() => ({ status: 200, text: "secure /again" })));
      // The first connection made a full handshake; the second, opened beside it, resumed its session.
      expect(resumed).toEqual([false, true]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("h1Transport over IPv6", () => {
  it("reaches [::1] with Host [::1]:port and keeps the connection", async (context) => {
    const server = await rawServer((request) => request.socket.write(OK), { host: "::1" }).catch(
      (err: NodeJS.ErrnoException) => err,
    );
    if (server instanceof Error) {
      context.skip(`this machine has no IPv6 loopback (${server.code})`);
      return;
    }
    expect((await get(`${server.url}/six`)).text).toBe("ok");
    expect((await get(`${server.url}/six`)).text).toBe("ok");
    expect(server.requests.map((r) => `${r.headers.host} ${r.connection}`)).toEqual([
      `[::1]:${server.port} 0`,
      `[::1]:${server.port} 0`,
    ]);
  });
});
