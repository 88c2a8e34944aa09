// The load-balanced relay, differentially: the same requests sent to a model server directly and through the relay
// must reach it, and come back, the same but for the hop-by-hop headers and Host: status and reason, headers in
// their case, order and repeats, bodies (chunked too), bodiless answers and an event stream; and what only the relay
// does: Expect answered at its own hop, 1xx answers kept to the hop, a 502 for a server that hangs up, backpressure.
import { type IncomingMessage, request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Endpoint } from "../../src/app/endpoint.js";
import { server } from "../../src/app/model-server/declare.js";
import { createLogger } from "../../src/log/index.js";
import { readWorkerConfig } from "../../src/runtime/config/options.js";
import { serveEndpoint } from "../../src/runtime/lb/serve.js";
import { eventually } from "../platform/helpers.js";
import { freePort, ROOT } from "../process.js";

const FIXTURE = join(ROOT, "test/fixtures/model-server/raw_server.mjs");
/** Headers that name a hop (RFC 9110 §7.6.1), Host, and Date (each server stamps its own). */
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-authorization", "host", "date"]);

interface Exchange {
  status: number;
  reason: string;
  rawHeaders: string[];
  body: string;
}

/** One request; `body` as an array is sent in pieces with no content-length (chunked). */
function exchange(
  base: string,
  method: string,
  path: string,
  headers: string[],
  body?: string | string[],
): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    // Raw headers as given: node:http adds no Host to an array, so it is named here.
    const raw = [...headers, "Host", new URL(base).host];
    const req = request(`${base}${path}`, { method, headers: raw }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (part: string) => {
        text += part;
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode!,
          reason: res.statusMessage!,
          rawHeaders: res.rawHeaders,
          body: text,
        }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    if (Array.isArray(body)) for (const part of body) req.write(part);
    else if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Raw headers without the hop's own, as [name, value] pairs in order. */
function endToEnd(raw: string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!HOP.has(raw[i]!.toLowerCase())) pairs.push([raw[i]!, raw[i + 1]!]);
  return pairs;
}

/** What the server saw of a request (its JSON body), end-to-end headers only. */
function seen(body: string) {
  const parsed = JSON.parse(body) as { method: string; url: string; rawHeaders: string[]; body: string };
  return { ...parsed, rawHeaders: endToEnd(parsed.rawHeaders) };
}

describe("the load-balanced relay, beside the model server called directly", () => {
  let direct: string;
  let relay: string;
  let stop: (reason: string) => void = () => {};
  let exitCode: Promise<number>;
  beforeAll(async () => {
    const port = await freePort();
    direct = `http://127.0.0.1:${port}`;
    const model = server({ command: process.execPath, args: [FIXTURE, String(port)], port, name: "raw" });
    const lines: string[] = [];
    const log = createLogger({ level: "INFO", json: false, destination: { write: (l) => lines.push(l) } });
    const { config } = readWorkerConfig(["--port", "0", "--host", "127.0.0.1", "--grace-period", "5"], {});
    exitCode = serveEndpoint(new Endpoint({ name: "relay", server: model }), config, log, {
      stop: new Promise((resolve) => {
        stop = resolve;
      }),
    });
    relay = await eventually(
      () => lines.map((l) => /listening on (http:\/\/\S+)/.exec(l)?.[1]).find(Boolean),
      "the listening line",
    );
    await eventually(async () => (await fetch(`${relay}/ping`)).status === 200, "/ping 200", 30_000);
  }, 60_000);
  afterAll(async () => {
    stop("test over");
    expect(await exitCode).toBe(0);
  }, 30_000);

  const both = async (method: string, path: string, headers: string[], body?: string | string[]) => {
    const [a, b] = [
      await exchange(direct, method, path, headers, body),
      await exchange(relay, method, path, headers, body),
    ];
    return { direct: a, relayed: b };
  };

  it("a request reaches the server with its headers as sent (case, order, repeats), less the hop's", async () => {
    const headers = [
      "Content-Type",
      "application/json",
      "X-Req",
      "1",
      "X-Req",
      "1b",
      "x-REQ",
      "2",
      "Accept",
      "text/plain",
      "Keep-Alive",
      "timeout=5",
      "Proxy-Authorization",
      "Basic eA==",
    ];
    const { direct: a, relayed: b } = await both("POST", "/any/path?a=1&b=two", headers, '{"x":1}');
    expect(seen(b.body)).toEqual(seen(a.body));
    // What the server saw is the client's headers in order, repeats apart, the hop's gone.
    expect(seen(b.body).rawHeaders.slice(0, 5)).toEqual([
      ["Content-Type", "application/json"],
      ["X-Req", "1"],
      ["X-Req", "1b"],
      ["x-REQ", "2"],
      ["Accept", "text/plain"],
    ]);
  });

  it("an answer comes back with its status, reason and headers as the server sent them (repeats too)", async () => {
    const { direct: a, relayed: b } = await both("PUT", "/x?status=201&reason=Made%20Here", [], "body");
    expect([b.status, b.reason]).toEqual([201, "Made Here"]);
    expect(endToEnd(b.rawHeaders)).toEqual(endToEnd(a.rawHeaders));
    expect(endToEnd(b.rawHeaders).slice(0, 5)).toEqual([
      ["X-Dup", "a"],
      ["X-Dup", "b"],
      ["Set-Cookie", "a=1"],
      ["Set-Cookie", "b=2"],
      ["X-Mixed-Case", "v"],
    ]);
  });

  it("a chunked request body arrives whole", async () => {
    const { direct: a, relayed: b } = await both(
      "POST",
      "/chunked",
      ["Content-Type", "text/plain"],
      ["one ", "two ", "three"],
    );
    expect(seen(b.body).body).toBe("one two three");
    expect(seen(b.body)).toEqual(seen(a.body));
  });

  it("HEAD, 204 and 304 answers come back without a body, the same as directly", async () => {
    for (const [method, path] of [
      ["HEAD", "/head"],
      ["GET", "/none?status=204"],
      ["GET", "/same?status=304"],
    ] as const) {
      const { direct: a, relayed: b } = await both(method, path, []);
      expect({ ...b, rawHeaders: endToEnd(b.rawHeaders) }).toEqual({
        ...a,
        rawHeaders: endToEnd(a.rawHeaders),
      });
      expect(b.body).toBe("");
    }
  });

  it("a request that expects 100 Continue gets it, and its body reaches the server; Expect stays at the relay's hop", async () => {
    const headers = ["Content-Type", "text/plain", "Expect", "100-continue", "X-After", "1"];
    const { direct: a, relayed: b } = await both("POST", "/expecting", headers, "the body");
    expect(b.status).toBe(200);
    expect(seen(b.body).body).toBe("the body");
    const withoutExpect = (raw: [string, string][]) => raw.filter(([name]) => name !== "Expect");
    expect(withoutExpect(seen(b.body).rawHeaders)).toEqual(withoutExpect(seen(a.body).rawHeaders));
  });

  it("an informational answer (103 Early Hints) stays at the hop: the final answer comes back, the same as directly", async () => {
    const { direct: a, relayed: b } = await both("POST", "/hints?early=1&status=201", [], "{}");
    expect([b.status, b.reason]).toEqual([201, a.reason]);
    expect(endToEnd(b.rawHeaders)).toEqual(endToEnd(a.rawHeaders));
    expect(seen(b.body)).toEqual(seen(a.body));
  });

  it("a server that closes the connection without answering: 502 naming the server, in node:http's words", async () => {
    const b = await exchange(relay, "GET", "/hang-up", []);
    expect(b.status).toBe(502);
    expect(JSON.parse(b.body)).toEqual({ error: "Model server 'raw' did not answer: socket hang up" });
  });

  it("a client that stops reading stops the server's writes (backpressure): the relay does not buffer the answer", async () => {
    const total = 256 * 1024 * 1024;
    const flooded = async () => Number(await (await fetch(`${direct}/flooded`)).text());
    const req = request(`${relay}/flood`);
    const answered = new Promise<IncomingMessage>((resolve, reject) => {
      req.on("response", resolve);
      req.on("error", reject);
    });
    req.end();
    const res = await answered;
    res.pause();
    try {
      // The server's count settles (it waits for drain) short of the whole answer.
      const settled = await eventually(async () => {
        const before = await flooded();
        await new Promise((resolve) => setTimeout(resolve, 300));
        const after = await flooded();
        return after > 0 && after === before ? after : undefined;
      }, "the server's writes to stop");
      expect(settled).toBeLessThan(total);
    } finally {
      req.destroy();
    }
  });

  it("an event stream comes back the same, its headers and every event", async () => {
    const { direct: a, relayed: b } = await both("POST", "/v1/chat/completions?sse=1", [], "{}");
    expect(b.body).toBe("data: one\n\ndata: [DONE]\n\n");
    expect({ ...b, rawHeaders: endToEnd(b.rawHeaders) }).toEqual({
      ...a,
      rawHeaders: endToEnd(a.rawHeaders),
    });
  });
});
