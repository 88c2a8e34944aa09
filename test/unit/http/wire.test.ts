// The node:http transport against real servers on 127.0.0.1: answers, deadlines, aborts, cut-off bodies, kept-alive
// connections; and openStream, the same with the body read as it arrives.

import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { nodeTransport, openStream, WireTimeoutError } from "../../../src/http/wire.js";
import { closedPortUrl, startServer, type TestServer } from "../../client/servers.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("nodeTransport", () => {
  it("sends method, headers and body with a Content-Length, and hands back status, headers and the whole body", async () => {
    const seen: { method?: string; headers?: Record<string, unknown>; body?: string } = {};
    server = await startServer((request, response) => {
      let body = "";
      request.setEncoding("utf8");
      request.on("data", (chunk: string) => {
        body += chunk;
      });
      request.on("end", () => {
        Object.assign(seen, { method: request.method, headers: request.headers, body });
        // Written in two pieces that split a multi-byte character: the text must still come out whole.
        const bytes = Buffer.from(JSON.stringify({ word: "naïve ✓" }));
        response.writeHead(201, "Made It", { "Content-Type": "application/json", "X-Twice": ["a", "b"] });
        response.write(bytes.subarray(0, 12));
        setTimeout(() => response.end(bytes.subarray(12)), 5);
      });
    });
    const { response, text } = await nodeTransport({
      method: "POST",
      url: `${server.url}/x?y=1`,
      headers: { Authorization: "K", "Content-Type": "application/json" },
      body: '{"a":"é"}',
    });
    expect(seen.method).toBe("POST");
    expect(seen.headers).toMatchObject({
      authorization: "K",
      "content-length": "10",
      "content-type": "application/json",
    });
    expect(seen.body).toBe('{"a":"é"}');
    expect(response).toMatchObject({ ok: true, status: 201, statusText: "Made It" });
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("x-twice")).toBe("a, b");
    expect(response.headers.get("x-missing")).toBeNull();
    expect(JSON.parse(text)).toEqual({ word: "naïve ✓" });
  });

  it("keeps the connection for the next request", async () => {
    const ports = new Set<number>();
    server = await startServer((request, response) => {
      ports.add(request.socket.remotePort ?? 0);
      response.end("ok");
    });
    for (let i = 0; i < 5; i++) {
      const { response } = await nodeTransport({ method: "GET", url: server.url, headers: {} });
      expect(response.status).toBe(200);
    }
    expect(server.requests).toHaveLength(5);
    expect(ports.size).toBe(1);
  });

  it("a non-2xx answer is an answer, not an error", async () => {
    server = await startServer((_request, response) => {
      response.writeHead(503).end("busy");
    });
    const { response, text } = await nodeTransport({ method: "GET", url: server.url, headers: {} });
    expect(response).toMatchObject({ ok: false, status: 503, statusText: "Service Unavailable" });
    expect(text).toBe("busy");
  });

  it("ends an exchange at its deadline, also one whose body stalls, and closes that connection", async () => {
    let closed = 0;
    server = await startServer((request, response) => {
      request.socket.on("close", () => closed++);
      if (request.url === "/headers") return; // never answers
      response.writeHead(200, { "content-length": "10" });
      response.write("12345"); // and never the rest
    });
    for (const path of ["/headers", "/body"]) {
      const started = performance.now();
      const failure = await nodeTransport({
        method: "GET",
        url: `${server.url}${path}`,
        headers: {},
        timeoutMs: 100,
      }).catch((err: unknown) => err);
      expect(failure).toBeInstanceOf(WireTimeoutError);
      expect((failure as Error).message).toBe("no answer within 100 ms");
      expect(performance.now() - started).toBeGreaterThanOrEqual(95);
    }
    await expect.poll(() => closed).toBe(2);
  });

  it("aborting rejects with the signal's reason and drops the request; an aborted signal sends nothing", async () => {
    server = await startServer(() => {}); // holds every request
    const controller = new AbortController();
    const pending = nodeTransport({ method: "GET", url: server.url, headers: {}, signal: controller.signal });
    await expect.poll(() => server?.requests.length).toBe(1);
    const reason = new Error("worker stopping");
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);

    await expect(
      nodeTransport({ method: "GET", url: server.url, headers: {}, signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ name: "AbortError" });
    expect(server.requests).toHaveLength(1);
  });

  it("a body cut off midway is an error, not a short answer", async () => {
    server = await startServer((_request, response) => {
      response.writeHead(200, { "content-length": "100" });
      response.write("only this", () => response.socket?.destroy());
    });
    await expect(nodeTransport({ method: "GET", url: server.url, headers: {} })).rejects.toThrow(
      /ECONNRESET|aborted/,
    );
  });

  it("a refused connection rejects with the socket's error code", async () => {
    const url = await closedPortUrl();
    await expect(nodeTransport({ method: "GET", url, headers: {} })).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
  });

  it("reaches a *.localhost name on loopback (RFC 6761), Host kept: the local platform's Pod proxy URLs", async () => {
    let host: string | undefined;
    server = await startServer((request, response) => {
      host = request.headers.host;
      response.end("pod");
    });
    const port = new URL(server.url).port;
    const { text } = await nodeTransport({
      method: "GET",
      url: `http://abc123-8000.localhost:${port}/`,
      headers: {},
    });
    expect(text).toBe("pod");
    expect(host).toBe(`abc123-8000.localhost:${port}`);
  });
  it("sends each URL's path, query and Host as the URL parser reads them, pre-parsed origin or not", async () => {
    const seen: { url?: string; host?: string }[] = [];
    server = await startServer((request, response) => {
      seen.push({ url: request.url, host: request.headers.host });
      response.end("ok");
    });
    const port = new URL(server.url).port;
    const urls = [
      `http://127.0.0.1:${port}/v2/ep/job-take/w1?gpu=A%20B&job_in_progress=0`,
      `http://127.0.0.1:${port}/v2/ep/job-done/w1/job-1?isStream=false`,
      `http://127.0.0.1:${port}/a/../b/./c?q='x y'#frag`,
      `http://127.0.0.1:${port}/naïve path?é=1`,
      `HTTP://127.0.0.1:${port}/Upper`,
      `http://[::1]:${port}/six`,
    ];
    for (const url of urls) {
      const answer = nodeTransport({ method: "GET", url, headers: {} });
      // The IPv6 loopback may be missing on this host: only that URL may fail to connect.
      const text = url.includes("[::1]")
        ? await answer.then(
            (a) => a.text,
            () => undefined,
          )
        : (await answer).text;
      if (text === undefined) continue;
      expect(text).toBe("ok");
      const parsed = new URL(url);
      expect(seen.at(-1)).toEqual({ url: parsed.pathname + parsed.search, host: parsed.host });
    }
    expect(seen.length).toBeGreaterThanOrEqual(5);
  });
});

/** The next piece of a streamed body, as text; undefined at its end. */
async function nextPiece(body: AsyncIterator<unknown>): Promise<string | undefined> {
  const step = await body.next();
  return step.done ? undefined : String(step.value);
}

describe("openStream", () => {
  it("resolves at the answer's head with the body still coming, piece by piece, and keeps the connection", async () => {
    const ports = new Set<number>();
    let held: ServerResponse | undefined;
    let seenBody = "";
    server = await startServer((request, response) => {
      ports.add(request.socket.remotePort ?? 0);
      request.setEncoding("utf8");
      request.on("data", (chunk: string) => {
        seenBody += chunk;
      });
      request.on("end", () => {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write("data: one\n\n");
        held = response;
      });
    });
    for (let i = 0; i < 2; i++) {
      const { response, body } = await openStream({
        method: "POST",
        url: `${server.url}/v1/chat/completions`,
        headers: { "content-type": "application/json" },
        body: '{"stream":true}',
      });
      expect(response).toMatchObject({ ok: true, status: 200 });
      expect(response.headers.get("content-type")).toBe("text/event-stream");
      const pieces = body[Symbol.asyncIterator]();
      // The first piece arrives while the server still holds the answer open.
      expect(await nextPiece(pieces)).toBe("data: one\n\n");
      held!.end("data: [DONE]\n\n");
      expect(await nextPiece(pieces)).toBe("data: [DONE]\n\n");
      expect(await nextPiece(pieces)).toBeUndefined();
    }
    expect(seenBody).toBe('{"stream":true}{"stream":true}');
    expect(ports.size).toBe(1);
  });

  it("aborting before the head rejects with the reason, and mid-body fails the body's read with it; the server sees both go", async () => {
    const closed: string[] = [];
    server = await startServer((request: IncomingMessage, response) => {
      response.on("close", () => closed.push(request.url ?? ""));
      if (request.url === "/head") return; // never answers
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write("data: one\n\n"); // and never the rest
    });
    const early = new AbortController();
    const pending = openStream({
      method: "GET",
      url: `${server.url}/head`,
      headers: {},
      signal: early.signal,
    });
    await expect.poll(() => server?.requests.length).toBe(1);
    const reason = new Error("job cancelled");
    early.abort(reason);
    await expect(pending).rejects.toBe(reason);

    const late = new AbortController();
    const { body } = await openStream({
      method: "GET",
      url: `${server.url}/body`,
      headers: {},
      signal: late.signal,
    });
    const pieces = body[Symbol.asyncIterator]();
    expect(await nextPiece(pieces)).toBe("data: one\n\n");
    late.abort(reason);
    await expect(nextPiece(pieces)).rejects.toBe(reason);
    await expect.poll(() => closed.sort()).toEqual(["/body", "/head"]);

    await expect(
      openStream({ method: "GET", url: server.url, headers: {}, signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ name: "AbortError" });
    expect(server.requests).toHaveLength(2);
  });

  it("a body cut off midway fails its read; a refused connection rejects with the socket's error code", async () => {
    server = await startServer((_request, response) => {
      response.writeHead(200, { "content-length": "100" });
      response.write("only this", () => response.socket?.destroy());
    });
    const { body } = await openStream({ method: "GET", url: server.url, headers: {} });
    const read = (async () => {
      for await (const _ of body);
    })();
    await expect(read).rejects.toThrow(/ECONNRESET|aborted/);
    const url = await closedPortUrl();
    await expect(openStream({ method: "GET", url, headers: {} })).rejects.toMatchObject({
      code: "ECONNREFUSED",
    });
  });
});
