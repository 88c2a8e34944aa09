import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { timeoutMessage } from "../../../../src/app/rules.js";
import { Endpoint, type EndpointOptions, type RouteRequest } from "../../../../src/index.js";
import { createLogger, type LogLevel } from "../../../../src/log/index.js";
import { RouteServer } from "../../../../src/runtime/lb/server.js";

const lines: string[] = [];
const log = (level: LogLevel = "INFO") =>
  createLogger({ level, json: false, destination: { write: (line: string) => lines.push(line) } });

const servers: RouteServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(0)));
  lines.length = 0;
});

/** A server for `api`, already READY unless `start` is false. */
async function serve(api: Endpoint, start = true): Promise<RouteServer> {
  const server = new RouteServer(api, { log: log() });
  servers.push(server);
  if (start) expect(await server.start()).toBe(true);
  return server;
}

function endpoint(options: EndpointOptions = {}): Endpoint {
  return new Endpoint({ name: "test-api", ...options });
}

const json = (payload: unknown) => ({
  payload: JSON.stringify(payload),
  headers: { "content-type": "application/json" },
});

describe("/ping: 204 while starting, 200 when ready (docs/toolkit.md §4.2)", () => {
  it("answers 204 while an onStart hook runs, then 200 {status: healthy}", async () => {
    let finish = () => {};
    const api = endpoint().onStart(() => new Promise<void>((resolve) => (finish = resolve)));
    api.get("/x", () => 1);
    const server = await serve(api, false);
    const started = server.start();
    const during = await server.app.inject({ method: "GET", url: "/ping" });
    expect(during.statusCode).toBe(204);
    expect(during.body).toBe("");
    expect(server.state).toBe("STARTING");
    // Routes are not served before the endpoint is ready.
    const early = await server.app.inject({ method: "GET", url: "/x" });
    expect(early.statusCode).toBe(503);
    expect(early.json()).toEqual({ error: "Endpoint 'test-api' is starting" });
    finish();
    expect(await started).toBe(true);
    const after = await server.app.inject({ method: "GET", url: "/ping" });
    expect(after.statusCode).toBe(200);
    expect(after.json()).toEqual({ status: "healthy" });
  });

  it("runs onStart hooks in order", async () => {
    const order: number[] = [];
    const api = endpoint()
      .onStart(async () => {
        await new Promise((r) => setTimeout(r, 5));
        order.push(1);
      })
      .onStart(() => {
        order.push(2);
      });
    api.get("/x", () => 1);
    await serve(api);
    expect(order).toEqual([1, 2]);
  });

  it("a failing onStart leaves the endpoint unhealthy (503)", async () => {
    const api = endpoint().onStart(() => {
      throw new Error("no weights");
    });
    api.get("/x", () => 1);
    const server = await serve(api, false);
    expect(await server.start()).toBe(false);
    const ping = await server.app.inject({ method: "GET", url: "/ping" });
    expect(ping.statusCode).toBe(503);
    expect(ping.json()).toEqual({ status: "unhealthy", state: "SETUP_FAILED" });
    expect(lines.join("")).toContain("onStart failed: Error: no weights");
  });
});

describe("serving routes", () => {
  it("passes the JSON body object to the route and returns its value as JSON", async () => {
    const api = endpoint();
    api.post("/echo", (body) => body);
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/echo",
      ...json({ a: 1, nested: { b: [2] } }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.json()).toEqual({ a: 1, nested: { b: [2] } });
  });

  it("takes bodies up to the load balancer's 30 MB; a larger one is 413 naming the limit", async () => {
    const api = endpoint();
    api.post("/size", (body: { data: string }) => ({ length: body.data.length }));
    const server = await serve(api);
    const fits = "x".repeat(25 * 1024 * 1024);
    const ok = await server.app.inject({ method: "POST", url: "/size", ...json({ data: fits }) });
    expect(ok.json()).toEqual({ length: fits.length });
    const over = await server.app.inject({
      method: "POST",
      url: "/size",
      ...json({ data: "x".repeat(30 * 1024 * 1024) }),
    });
    expect(over.statusCode).toBe(413);
    expect(over.json()).toEqual({ error: "Request body is larger than the 30 MB limit" });
  });

  it("merges path parameters into the arguments (GET: with the query)", async () => {
    const api = endpoint();
    api.get("/hello/:name", (args) => args);
    api.put("/items/{id}", (args, request) => ({ args, params: request.params }));
    const server = await serve(api);
    const get = await server.app.inject({ method: "GET", url: "/hello/flash?lang=en&tag=a&tag=b" });
    expect(get.json()).toEqual({ lang: "en", tag: ["a", "b"], name: "flash" });
    const put = await server.app.inject({ method: "PUT", url: "/items/42", ...json({ price: 3 }) });
    expect(put.json()).toEqual({ args: { price: 3, id: "42" }, params: { id: "42" } });
  });

  it("gives the route the request: method, path, query, body, headers", async () => {
    const api = endpoint();
    api.post("/inspect/:id", (_args, request: RouteRequest) => ({
      method: request.method,
      path: request.path,
      url: request.url,
      params: request.params,
      query: request.query,
      body: request.body,
      header: request.headers["x-test"],
    }));
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/inspect/7?q=1",
      payload: "[1,2]",
      headers: { "content-type": "application/json", "x-test": "yes" },
    });
    expect(res.json()).toEqual({
      method: "POST",
      path: "/inspect/:id",
      url: "/inspect/7?q=1",
      params: { id: "7" },
      query: { q: "1" },
      body: [1, 2],
      header: "yes",
    });
  });

  it("passes a body that is not an object as it is", async () => {
    const api = endpoint();
    api.post("/raw", (body) => ({ got: body }));
    const server = await serve(api);
    const res = await server.app.inject({ method: "POST", url: "/raw", ...json(["a", 1]) });
    expect(res.json()).toEqual({ got: ["a", 1] });
    const text = await server.app.inject({ method: "POST", url: "/raw", ...json("hello") });
    expect(text.json()).toEqual({ got: "hello" });
  });

  it("an empty JSON body is no body: the route gets the query", async () => {
    const api = endpoint();
    api.post("/empty", (args) => args);
    api.delete("/things/:id", (args) => args);
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/empty?x=1",
      payload: "",
      headers: { "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ x: "1" });
    const del = await server.app.inject({ method: "DELETE", url: "/things/9" });
    expect(del.json()).toEqual({ id: "9" });
  });

  it("sends every return value as JSON: strings, numbers, booleans, null, undefined", async () => {
    const api = endpoint();
    const values: Record<string, unknown> = { s: "hi", n: 42, t: true, z: null, u: undefined, a: [1, "x"] };
    for (const [key, value] of Object.entries(values)) api.get(`/${key}`, () => value);
    const server = await serve(api);
    const expected: Record<string, string> = {
      s: '"hi"',
      n: "42",
      t: "true",
      z: "null",
      u: "null",
      a: '[1,"x"]',
    };
    for (const [key, body] of Object.entries(expected)) {
      const res = await server.app.inject({ method: "GET", url: `/${key}` });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(res.body).toBe(body);
    }
  });

  it("awaits async routes", async () => {
    const api = endpoint();
    api.post("/slow", async ({ ms }: { ms: number }) => {
      await new Promise((r) => setTimeout(r, ms));
      return { waited: ms };
    });
    const server = await serve(api);
    const res = await server.app.inject({ method: "POST", url: "/slow", ...json({ ms: 10 }) });
    expect(res.json()).toEqual({ waited: 10 });
  });

  it("a Response returned by a route is sent as it is: status, headers, body", async () => {
    const api = endpoint();
    api.get("/created", () => new Response("made", { status: 201, headers: { "x-kind": "custom" } }));
    const server = await serve(api);
    const res = await server.app.inject({ method: "GET", url: "/created" });
    expect(res.statusCode).toBe(201);
    expect(res.headers["x-kind"]).toBe("custom");
    expect(res.body).toBe("made");
  });

  it("answers plain values without reading the global Response, which would load undici on a worker's first request", async () => {
    const api = endpoint();
    api.post("/echo", (body) => body);
    api.get("/text", () => "hi");
    const server = await serve(api);
    const global = Object.getOwnPropertyDescriptor(globalThis, "Response")!;
    let reads = 0;
    Object.defineProperty(globalThis, "Response", {
      configurable: true,
      get: () => {
        reads++;
        return global.value ?? global.get?.call(globalThis);
      },
    });
    try {
      const echo = await server.app.inject({ method: "POST", url: "/echo", ...json({ a: 1 }) });
      expect(echo.json()).toEqual({ a: 1 });
      const text = await server.app.inject({ method: "GET", url: "/text" });
      expect(text.json()).toBe("hi");
    } finally {
      Object.defineProperty(globalThis, "Response", global);
    }
    expect(reads).toBe(0);
  });
});

describe("errors", () => {
  it("a thrown error is a 500 with its message, logged with the stack", async () => {
    const api = endpoint();
    api.post("/fail", () => {
      throw new Error("model exploded");
    });
    api.post("/reject", async () => {
      throw new TypeError("bad type");
    });
    const server = await serve(api);
    const res = await server.app.inject({ method: "POST", url: "/fail", ...json({}) });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: "model exploded" });
    const rejected = await server.app.inject({ method: "POST", url: "/reject", ...json({}) });
    expect(rejected.statusCode).toBe(500);
    expect(rejected.json()).toEqual({ error: "bad type" });
    expect(lines.join("")).toContain("POST /fail failed: Error: model exploded");
  });

  it("an error with a statusCode keeps it", async () => {
    const api = endpoint();
    api.get("/missing", () => {
      throw Object.assign(new Error("no such item"), { statusCode: 404 });
    });
    const server = await serve(api);
    const res = await server.app.inject({ method: "GET", url: "/missing" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: "no such item" });
  });

  it("malformed JSON is a 400", async () => {
    const api = endpoint();
    api.post("/echo", (body) => body);
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/echo",
      payload: '{"a":',
      headers: { "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/^Malformed JSON body: /);
  });

  it("refuses prototype poisoning", async () => {
    const api = endpoint();
    api.post("/echo", (body) => body);
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/echo",
      payload: '{"__proto__": {"polluted": true}}',
      headers: { "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("an unknown route is a 404 naming the endpoint", async () => {
    const api = endpoint();
    api.get("/x", () => 1);
    const server = await serve(api);
    const res = await server.app.inject({ method: "GET", url: "/nope?q=1" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: "No route GET /nope on endpoint 'test-api'" });
  });

  it("a declared path called with another method is a 405 with Allow naming the methods it takes", async () => {
    const api = endpoint();
    api.post("/sum", () => 1);
    api.put("/items/:id", () => 1);
    api.delete("/items/:id", () => 1);
    const server = await serve(api);
    const sum = await server.app.inject({ method: "GET", url: "/sum?a=1" });
    expect(sum.statusCode).toBe(405);
    expect(sum.headers.allow).toBe("POST");
    expect(sum.json()).toEqual({
      error: "Method GET not allowed on /sum of endpoint 'test-api': it takes POST",
    });
    const item = await server.app.inject({ method: "PATCH", url: "/items/7" });
    expect(item.statusCode).toBe(405);
    expect(item.headers.allow).toBe("PUT, DELETE");
    // A path no route declares is still a 404.
    expect((await server.app.inject({ method: "GET", url: "/items/7/parts" })).statusCode).toBe(404);
  });

  it("a body that is neither JSON nor a form is a 415 that says what to send", async () => {
    const api = endpoint();
    api.post("/echo", (body) => body);
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/echo",
      payload: "a=1",
      headers: { "content-type": "application/xml" },
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().error).toBe(
      "Unsupported content type application/xml: send JSON (content-type: application/json) or a form (multipart/form-data)",
    );
  });

  it("a malformed multipart body is a 400", async () => {
    const api = endpoint();
    api.post("/upload", (body) => body);
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/upload",
      payload: "--nope\r\nnot a part",
      headers: { "content-type": "multipart/form-data; boundary=other" },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatch(/^Malformed form body: /);
  });
});

describe("forms: file parts as bytes, the rest as strings (docs/toolkit.md §4.3 `bytes` parameters)", () => {
  it("a multipart upload over a real socket: the file is a Uint8Array, fields strings, path params merged", async () => {
    const api = endpoint();
    api.post(
      "/upload/:bucket",
      (args: { file: Uint8Array; name: string; tag: string[]; bucket: string }) => ({
        bytes: args.file instanceof Uint8Array ? [...args.file] : "not bytes",
        name: args.name,
        tag: args.tag,
        bucket: args.bucket,
      }),
    );
    const server = await serve(api);
    const url = await server.app.listen({ host: "127.0.0.1", port: 0 });
    const form = new FormData();
    form.append("file", new Blob([Uint8Array.from([0, 1, 2, 255])]), "data.bin");
    form.append("name", "weights");
    form.append("tag", "a");
    form.append("tag", "b");
    const res = await fetch(`${url}/upload/models`, { method: "POST", body: form });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      bytes: [0, 1, 2, 255],
      name: "weights",
      tag: ["a", "b"],
      bucket: "models",
    });
  });

  it("a url-encoded form gives strings; a __proto__ field is just a field", async () => {
    const api = endpoint();
    api.post("/form", (args: Record<string, unknown>) => ({
      keys: Object.keys(args),
      proto: Object.getPrototypeOf(args) === Object.prototype,
      a: args.a,
    }));
    const server = await serve(api);
    const res = await server.app.inject({
      method: "POST",
      url: "/form",
      payload: "a=1&__proto__=x",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.json()).toEqual({ keys: ["a", "__proto__"], proto: true, a: "1" });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe("execution timeout", () => {
  it("answers 504 with the toolkit's message and aborts the route's signal", async () => {
    let aborted: unknown;
    const api = endpoint({ executionTimeoutMs: 50 });
    api.post("/hang", (_body, request) => {
      return new Promise((resolve) => {
        request.signal.addEventListener("abort", () => {
          aborted = request.signal.reason;
          resolve("too late");
        });
      });
    });
    api.post("/quick", () => ({ ok: true }));
    const server = await serve(api);
    const res = await server.app.inject({ method: "POST", url: "/hang", ...json({}) });
    expect(res.statusCode).toBe(504);
    expect(res.json()).toEqual({ error: "Execution timeout on test-api after 0.05s" });
    expect(String(aborted)).toContain("Execution timeout on test-api after 0.05s");
    // flash start logs it too: a 504 must not pass silently.
    expect(lines.join("\n")).toMatch(
      /\| WARN \| .*POST \/hang answered 504: Execution timeout on test-api after 0\.05s/,
    );
    const quick = await server.app.inject({ method: "POST", url: "/quick", ...json({}) });
    expect(quick.json()).toEqual({ ok: true });
  });

  it("formats seconds as the toolkit prints them", () => {
    expect(timeoutMessage("my-api", 60_000)).toBe("Execution timeout on my-api after 60.0s");
    expect(timeoutMessage("my-api", 1500)).toBe("Execution timeout on my-api after 1.5s");
  });
});

describe("shutdown", () => {
  it("close() lets an in-flight request finish and refuses new connections", async () => {
    let release = () => {};
    let entered = () => {};
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const api = endpoint();
    api.post("/work", async () => {
      entered();
      await new Promise<void>((resolve) => (release = resolve));
      return { finished: true };
    });
    const server = await serve(api);
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const answer = post(port, "/work", {});
    await inside;
    expect(server.inFlight).toBe(1);
    const closed = server.close(30_000);
    release();
    expect(await answer).toEqual({ status: 200, body: { finished: true } });
    await closed;
    await expect(post(port, "/work", {})).rejects.toThrow(/ECONNREFUSED/);
  });

  it("after the grace period, running requests are aborted and their connections closed", async () => {
    let signal: AbortSignal | undefined;
    let entered = () => {};
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const api = endpoint();
    api.post("/forever", (_body, request) => {
      signal = request.signal;
      entered();
      return new Promise(() => {});
    });
    const server = await serve(api);
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    const address = server.app.server.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const answer = post(port, "/forever", {}).catch((err: Error) => err);
    await inside;
    const closed = server.close(60_000);
    server.endGrace();
    await closed;
    expect(signal?.aborted).toBe(true);
    expect(await answer).toBeInstanceOf(Error);
  });
});

function post(port: number, path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
