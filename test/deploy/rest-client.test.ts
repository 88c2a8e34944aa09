// The REST v2 client in this process against a scripted server on 127.0.0.1: the exact requests it sends,
// what it retries (reads, never a create that was answered), the errors it makes of API answers, and the
// worker-log SSE stream. (The CLI's own runs go through child processes; these are the client's units.)
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isFlashError } from "../../src/flash-error.js";
import { CircuitBreakers } from "../../src/http/breaker.js";
import { createLogger } from "../../src/log/index.js";
import { ApiConnectionError, ApiError, isApiError, RestClient } from "../../src/toolkit/rest/client.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}
type Script = (seen: Seen, res: ServerResponse) => void;

let server: Server;
let base = "";
let seen: Seen[] = [];
let script: Script[] = [];

beforeEach(async () => {
  seen = [];
  script = [];
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString("utf8");
    });
    req.on("end", () => {
      const entry = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body };
      seen.push(entry);
      const next = script.shift();
      if (next) next(entry, res);
      else res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const json =
  (status: number, body: unknown, statusText?: string): Script =>
  (_s, res) => {
    res.writeHead(status, statusText ?? "", { "content-type": "application/json" }).end(JSON.stringify(body));
  };
const text =
  (status: number, body: string, statusText?: string): Script =>
  (_s, res) => {
    res.writeHead(status, statusText ?? "", { "content-type": "text/plain" }).end(body);
  };

const FAST = { attempts: 3, baseMs: 1, maxMs: 2 };
const client = (extra: { url?: string } = {}) =>
  new RestClient({
    url: extra.url ?? `${base}/v2/`,
    apiKey: "rk_secret",
    retry: FAST,
    breakers: new CircuitBreakers({ failureThreshold: 100 }),
  });

describe("requests", () => {
  it("drops a trailing slash and /v2 from the base, and sends the Bearer key, Accept and a User-Agent", async () => {
    const api = client();
    expect(api.url).toBe(base);
    script.push(json(200, { endpoints: [{ id: "e1" }] }));
    expect(await api.listEndpoints()).toEqual([{ id: "e1" }]);
    const [get] = seen;
    expect(get!.method).toBe("GET");
    expect(get!.url).toBe("/v2/serverless");
    expect(get!.headers.authorization).toBe("Bearer rk_secret");
    expect(get!.headers.accept).toBe("application/json");
    expect(get!.headers["user-agent"]).toMatch(/^flash-worker-deploy\/\S+ Node\.js\/\d+/);
    expect(get!.headers["content-type"]).toBeUndefined();
    expect(get!.body).toBe("");
  });

  it("each call's method, path (ids encoded) and JSON body", async () => {
    const api = client();
    script.push(json(200, { id: "a b" }), json(200, { id: "x" }), json(200, { id: "x" }));
    await api.getEndpoint("a b");
    await api.createEndpoint({ name: "n", image: "i" } as never);
    await api.updateEndpoint("e/1", { image: "j" } as never);
    script.push(json(200, {}), json(200, { workers: [] }), json(200, { registries: [{ id: "r" }] }));
    await api.deleteEndpoint("e1");
    await api.listWorkers("e 2");
    expect(await api.listRegistries()).toEqual([{ id: "r" }]);
    script.push(json(200, { id: "r2" }), json(200, { gpus: [{ id: "g" }] }));
    expect(await api.createRegistry({ name: "n", username: "u", password: "p" })).toEqual({ id: "r2" });
    expect(await api.gpuTypes()).toEqual([{ id: "g" }]);
    expect(seen.map((s) => `${s.method} ${s.url} ${s.body}`)).toEqual([
      "GET /v2/serverless/a%20b ",
      'POST /v2/serverless {"name":"n","image":"i"}',
      'PATCH /v2/serverless/e%2F1 {"image":"j"}',
      "DELETE /v2/serverless/e1 ",
      "GET /v2/serverless/e%202/workers ",
      "GET /v2/registries ",
      'POST /v2/registries {"name":"n","username":"u","password":"p"}',
      "GET /v2/catalog/gpus ",
    ]);
    expect(seen[1]!.headers["content-type"]).toBe("application/json");
  });

  it("drops every trailing slash of the base", () => {
    expect(client({ url: `${base}//` }).url).toBe(base);
    expect(client({ url: `${base}/v2` }).url).toBe(base);
  });

  it("an empty 2xx body is undefined, not a parse error", async () => {
    script.push((_s, res) => res.writeHead(204).end());
    await expect(client().deleteEndpoint("e1")).resolves.toBeUndefined();
  });
});

describe("retries", () => {
  it("a read is retried on 503 and 429; a create answered 503 is not (the endpoint may exist by then)", async () => {
    const api = client();
    script.push(text(503, "busy"), text(429, "slow"));
    script.push(json(200, { endpoints: [] }));
    expect(await api.listEndpoints()).toEqual([]);
    expect(seen.length).toBe(3);
    seen = [];
    script.push(text(503, "busy"));
    await expect(api.createEndpoint({ name: "n" } as never)).rejects.toThrow("503");
    expect(seen.length).toBe(1);
  });

  it("each retry is logged with the call, the attempt and the wait", async () => {
    const lines: string[] = [];
    const log = createLogger({
      level: "DEBUG",
      json: false,
      destination: { write: (l: string) => lines.push(l) },
    });
    const api = new RestClient({
      url: base,
      apiKey: "k",
      log,
      retry: { attempts: 2, baseMs: 3, maxMs: 3 },
      breakers: new CircuitBreakers({ failureThreshold: 100 }),
    });
    script.push(text(503, "busy", "Service Unavailable"));
    await api.gpuTypes();
    // A 3 ms share, jittered down by up to half.
    expect(lines.join("")).toMatch(
      /GET \/v2\/catalog\/gpus attempt 1\/2 failed: 503 Service Unavailable: busy\. Retrying in [23] ms/,
    );
  });

  it("a 4xx is not retried", async () => {
    script.push(json(404, { title: "Not Found", detail: "no endpoint e9" }));
    await expect(client().getEndpoint("e9")).rejects.toThrow("404 Not Found: no endpoint e9");
    expect(seen.length).toBe(1);
  });

  it("an API that refuses connections is named, after the retries", async () => {
    const { port } = server.address() as AddressInfo;
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    const api = new RestClient({
      url: `http://127.0.0.1:${port}`,
      apiKey: "k",
      retry: FAST,
      breakers: new CircuitBreakers({ failureThreshold: 100 }),
    });
    const err = await api.listEndpoints().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiConnectionError);
    expect([(err as ApiConnectionError).name, (err as ApiConnectionError).code]).toEqual([
      "ApiConnectionError",
      "API_UNREACHABLE",
    ]);
    expect((err as Error).message).toMatch(
      new RegExp(`^Failed to connect to the API at http://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`),
    );
    server = createServer().listen(0, "127.0.0.1");
  });

  it("consecutive failures open the API's circuit, and calls then fail fast naming it", async () => {
    const api = new RestClient({
      url: base,
      apiKey: "k",
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      breakers: new CircuitBreakers({ failureThreshold: 2, recoveryMs: 60_000 }),
    });
    script.push(text(500, "x"), text(500, "x"));
    await expect(api.listEndpoints()).rejects.toThrow("500");
    await expect(api.listEndpoints()).rejects.toThrow("500");
    await expect(api.listEndpoints()).rejects.toThrow(
      `Circuit breaker open for the API at ${base} after 2 consecutive failures. Retry in 60 seconds.`,
    );
    expect(seen.length).toBe(2);
  });
});

describe("errors", () => {
  it("an ErrorResponse becomes status, title, detail and fields", async () => {
    script.push(
      json(400, {
        title: "Bad Request",
        status: 400,
        detail: "invalid body",
        errors: ["gpu.pools: required", 7],
      }),
    );
    const err = await client()
      .createEndpoint({} as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(isApiError(err)).toBe(true);
    expect(isFlashError(err, "API_HTTP")).toBe(true);
    const api = err as ApiError;
    expect([api.name, api.code]).toEqual(["ApiError", "API_HTTP"]);
    expect(api.message).toBe("400 Bad Request: invalid body (gpu.pools: required; 7)");
    expect([api.status, api.method, api.path, api.url]).toEqual([
      400,
      "POST",
      "/v2/serverless",
      `${base}/v2/serverless`,
    ]);
  });

  it("a detail equal to the title is not repeated; {error} stands in for detail; the status text for a missing title", async () => {
    script.push(json(401, { title: "Unauthorized", detail: "Unauthorized" }));
    await expect(client().listEndpoints()).rejects.toThrow(/^401 Unauthorized$/);
    script.push(json(403, { error: "key lacks write access" }, "Forbidden"));
    await expect(client().listEndpoints()).rejects.toThrow(/^403 Forbidden: key lacks write access$/);
  });

  it("a body that is not JSON is the detail, trimmed and cut at 300 characters; no status text is 'Error'", async () => {
    script.push(text(502, `  ${"g".repeat(400)}  `, "Bad Gateway"));
    const api = new RestClient({
      url: base,
      apiKey: "k",
      retry: { attempts: 1, baseMs: 1, maxMs: 1 },
      breakers: new CircuitBreakers(),
    });
    await expect(api.listEndpoints()).rejects.toThrow(/^502 Bad Gateway: g{300}$/);
    script.push(text(418, "teapot", ""));
    await expect(api.createEndpoint({} as never)).rejects.toThrow(/^418 Error: teapot$/);
  });
});

describe("worker logs (SSE)", () => {
  it("hands over each event of the backlog, multi-line data joined, then returns after a quiet moment", async () => {
    script.push((_s, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('data: {"line":"one"}\n\n');
      res.write('event: log\ndata: {"line":\ndata: "two"}\n\n: comment\n\n');
      res.write('data: {"line":"thr');
      setTimeout(() => res.write('ee"}\n\n'), 50);
    });
    const events: unknown[] = [];
    await client().workerLogs("e 1", "w1", { onEvent: (e) => events.push(e) });
    expect(events).toEqual([{ line: "one" }, { line: "two" }, { line: "three" }]);
    expect(seen[0]!.url).toBe("/v2/serverless/e%201/workers/w1/logs?tail=100");
    expect(seen[0]!.headers.accept).toBe("text/event-stream");
  });

  it("CRLF-, CR- and LF-framed events all fire, however the stream is cut into chunks", async () => {
    const body = [
      'data: {"line":"crlf"}\r\n\r\n',
      'event: log\r\ndata: {"line":\r\ndata: "multi"}\r\n\r\n',
      'data: {"line":"cr"}\r\r',
      'data: {"line":"lf"}\n\n',
      'data: {"line":"é€"}\r\n\r\n',
    ].join("");
    const bytes = Buffer.from(body);
    // Cuts between a CR and its LF, inside "data:", inside a UTF-8 character.
    const cuts = [
      0,
      bytes.indexOf("\r\n") + 1,
      bytes.indexOf("ata:", 30),
      bytes.indexOf("é") + 1,
      bytes.length,
    ];
    script.push(async (_s, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      for (let i = 1; i < cuts.length; i++) {
        await new Promise<void>((resolve) =>
          res.write(bytes.subarray(cuts[i - 1], cuts[i]), () => resolve()),
        );
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end();
    });
    const events: unknown[] = [];
    await client().workerLogs("e1", "w1", { follow: true, onEvent: (e) => events.push(e) });
    expect(events).toEqual([
      { line: "crlf" },
      { line: "multi" },
      { line: "cr" },
      { line: "lf" },
      { line: "é€" },
    ]);
  });

  it("follows until the caller aborts, with the tail asked for", async () => {
    let res!: ServerResponse;
    script.push((_s, r) => {
      res = r;
      r.writeHead(200, { "content-type": "text/event-stream" });
      r.write('data: {"line":"a"}\n\n');
    });
    const controller = new AbortController();
    const events: Array<{ line: string }> = [];
    const following = client().workerLogs("e1", "w1", {
      tail: 5,
      follow: true,
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e as { line: string });
        if (events.length === 1) setTimeout(() => res.write('data: {"line":"b"}\n\n'), 700);
        if (events.length === 2) controller.abort();
      },
    });
    await following;
    expect(events.map((e) => e.line)).toEqual(["a", "b"]);
    expect(seen[0]!.url).toBe("/v2/serverless/e1/workers/w1/logs?tail=5");
  });

  it("following ends when the stream ends", async () => {
    script.push((_s, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('data: {"line":"last"}\n\n');
      setTimeout(() => res.end(), 100);
    });
    const events: unknown[] = [];
    await client().workerLogs("e1", "w1", { follow: true, onEvent: (e) => events.push(e) });
    expect(events).toEqual([{ line: "last" }]);
  });

  it("a stream cut off midway is an error, not a quiet end", async () => {
    script.push((_s, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write('data: {"line":"one"}\n\n');
      setTimeout(() => res.socket?.destroy(), 100);
    });
    await expect(client().workerLogs("e1", "w1", { follow: true, onEvent: () => {} })).rejects.toThrow();
  });

  it("an error answer is an ApiError", async () => {
    script.push(json(404, { title: "Not Found", detail: "worker w9 not found" }));
    await expect(client().workerLogs("e1", "w9", { onEvent: () => {} })).rejects.toThrow(
      "404 Not Found: worker w9 not found",
    );
  });
});
