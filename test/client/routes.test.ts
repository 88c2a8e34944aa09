// The endpoint client on a load-balanced endpoint of the real local platform: each route method through
// the proxy to a real worker, and a clear EndpointKindError when queue calls and route calls are mixed up.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CircuitBreakers,
  EndpointClient,
  type EndpointClientOptions,
  EndpointHttpError,
  EndpointKindError,
  EndpointNotDeployedError,
} from "../../src/client/index.js";
import { writeDeployments } from "../../src/project/deployments.js";
import { ENDPOINT, lbReady, startTestPlatform, type TestPlatform } from "../platform/helpers.js";
import { captureLog, FAST_RETRY } from "./servers.js";

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({
    loadBalanced: [{ id: "routes-api", file: "test/fixtures/lb-routes.ts", workers: [1, 1] }],
  });
  await lbReady(t, "routes-api");
}, 90_000);
afterAll(async () => {
  await t.platform.close();
});

function client(options: Partial<EndpointClientOptions>): EndpointClient {
  return new EndpointClient({
    baseUrl: t.platform.url,
    apiKey: t.platform.apiKey,
    logger: captureLog("WARN").log,
    retry: FAST_RETRY,
    breakers: new CircuitBreakers(),
    env: {},
    ...options,
  });
}

describe("route calls", () => {
  it("get, post, put, patch and delete reach the routes by id (the platform's /lb/<id>)", async () => {
    const ep = client({ id: "routes-api" });
    expect(await ep.get("/hello/flash", { greeting: "hi" })).toEqual({ text: "hi flash" });
    expect(await ep.post("/sum", { a: 2, b: 3 })).toEqual({ sum: 5 });
    expect(await ep.put("/items/7", { value: [1] })).toEqual({ id: "7", value: [1], op: "put" });
    expect(await ep.patch("/items/7", { value: "x" })).toEqual({ id: "7", value: "x", op: "patch" });
    expect(await ep.delete("/items/7")).toEqual({ id: "7", deleted: true });
  });

  it("by the routes' URL too, and an unknown route is an EndpointHttpError with the worker's message", async () => {
    const ep = client({ url: `${t.platform.url}/lb/routes-api` });
    expect(await ep.post("/sum", { a: 1, b: 1 })).toEqual({ sum: 2 });
    const missing = await ep.get("/nope").catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(EndpointHttpError);
    expect((missing as EndpointHttpError).status).toBe(404);
    expect((missing as Error).message).toBe(
      "HTTP error from endpoint routes-api: 404 Not Found: No route GET /nope on endpoint 'routes-api'",
    );
  });
});

describe("the wrong method", () => {
  it("GET on a POST-only route, through the platform's proxy: 405 with Allow, and the client's error says so", async () => {
    const res = await fetch(`${t.platform.url}/lb/routes-api/sum`, {
      headers: { authorization: `Bearer ${t.platform.apiKey}` },
    });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
    const err = await client({ id: "routes-api" })
      .get("/sum")
      .catch((e: unknown) => e);
    expect((err as EndpointHttpError).status).toBe(405);
    expect((err as Error).message).toBe(
      "HTTP error from endpoint routes-api: 405 Method Not Allowed: Method GET not allowed on /sum of endpoint 'routes-api': it takes POST",
    );
  });
});

describe("the kind mixed up", () => {
  it("runsync on the routes' URL: EndpointKindError before any request, saying how to call a route", async () => {
    const ep = client({ url: `${t.platform.url}/lb/routes-api` });
    const err = await ep.runsync({ a: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointKindError);
    expect((err as Error).message).toBe(
      'Endpoint routes-api is load-balanced: it serves HTTP routes, not jobs, so POST /runsync cannot reach it. Call a route instead: post("/path", body), get("/path"), put, patch or delete.',
    );
  });

  it("runsync by the id of a load-balanced endpoint: the platform has no queue endpoint of that id, and says what to call", async () => {
    const err = await client({ id: "routes-api" })
      .runsync({ a: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointNotDeployedError);
    expect((err as Error).message).toContain(
      `has no queue endpoint routes-api (a load-balanced one is called through its routes: post("/path", body), get("/path"))`,
    );
  });

  it("a job URL that leads to a worker's routes: the worker's 'No route POST /runsync' becomes EndpointKindError", async () => {
    // A /v2/<id> URL whose prefix is the routes' base (as a proxy might map it).
    const ep = client({ url: `${t.platform.url}/lb/routes-api/v2/routes-api`, name: "routes-api" });
    const err = await ep.runsync({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointKindError);
  });

  it("a route call on a queue endpoint: the platform says it is a queue endpoint, and the client says to send a job", async () => {
    const res = await fetch(`${t.platform.url}/lb/${ENDPOINT}/sum`, {
      method: "POST",
      headers: { authorization: `Bearer ${t.platform.apiKey}` },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: `Endpoint ${ENDPOINT} is a queue endpoint, not load-balanced: send it jobs with POST /v2/${ENDPOINT}/runsync (or /run) and a body {"input": {...}}`,
    });
    const err = await client({ id: ENDPOINT })
      .post("/sum", {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointKindError);
    expect((err as Error).message).toBe(
      `Endpoint ${ENDPOINT} is queue-based: it takes jobs, not HTTP routes, so POST /sum cannot reach it. Send it a job instead: run(input) or runsync(input).`,
    );
  });

  it("an unknown id names the nearest existing endpoint, on the platform and in the client's error", async () => {
    const headers = { authorization: `Bearer ${t.platform.apiKey}` };
    const lb = await fetch(`${t.platform.url}/lb/routes-apo/sum`, { method: "POST", headers });
    expect(lb.status).toBe(404);
    expect(await lb.json()).toEqual({
      error: "Load-balanced endpoint routes-apo not found (did you mean routes-api?)",
    });
    const queue = await fetch(`${t.platform.url}/v2/ep-tset/runsync`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json" },
      body: JSON.stringify({ input: {} }),
    });
    expect(queue.status).toBe(404);
    expect(await queue.json()).toEqual({ error: "Endpoint ep-tset not found (did you mean ep-test?)" });
    // Nothing close: no guess.
    const far = await fetch(`${t.platform.url}/lb/zzzzzzzz/sum`, { method: "POST", headers });
    expect(await far.json()).toEqual({ error: "Load-balanced endpoint zzzzzzzz not found" });

    const err = await client({ id: "routes-apo" })
      .post("/sum", {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointNotDeployedError);
    expect((err as Error).message).toContain(
      "has no load-balanced endpoint routes-apo (did you mean routes-api?) (a queue endpoint takes jobs",
    );
    await expect(client({ id: "ep-tset" }).runsync({})).rejects.toThrow(
      "has no queue endpoint ep-tset (did you mean ep-test?)",
    );
  });

  it("an endpoint called by name: the deployment record's kind decides, before any request", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "flash-routes-"));
    try {
      writeDeployments(cwd, {
        platform: t.platform.url,
        deployedAt: new Date().toISOString(),
        endpoints: {
          queue: { id: ENDPOINT, url: `${t.platform.url}/v2/${ENDPOINT}`, kind: "queue" },
          api: { id: "routes-api", url: `${t.platform.url}/lb/routes-api`, kind: "load-balanced" },
        },
      });
      const queue = client({ name: "queue", cwd });
      await expect(queue.post("/sum", {})).rejects.toThrow(
        "Endpoint queue is queue-based: it takes jobs, not HTTP routes, so POST /sum cannot reach it. Send it a job instead: run(input) or runsync(input).",
      );
      const api = client({ name: "api", cwd });
      expect(await api.post("/sum", { a: 4, b: 4 })).toEqual({ sum: 8 });
      await expect(api.run({})).rejects.toBeInstanceOf(EndpointKindError);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });

  it("a route path without a leading slash is refused", async () => {
    await expect(client({ id: "routes-api" }).get("hello/x")).rejects.toThrow(
      'Route paths start with "/": got "hello/x"',
    );
  });
});
