import { describe, expect, it } from "vitest";
import { declarationOf, type EndpointHandlerDefinition } from "../../../src/app/endpoint.js";
import { registry } from "../../../src/app/registry.js";
import { Endpoint, EndpointConfigError } from "../../../src/index.js";

const noop = () => ({ ok: true });

function message(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EndpointConfigError);
    return (err as Error).message;
  }
  throw new Error("expected an error");
}

describe("route rules (interface document: Route rules; docs/toolkit.md §4.1)", () => {
  it("declares GET, POST, PUT, DELETE and PATCH routes, and returns the function", () => {
    const api = new Endpoint({ name: "my-api" });
    const fn = async (body: { x: number }) => body.x;
    expect(api.post("/a", fn)).toBe(fn);
    api.get("/a", noop);
    api.put("/a", noop);
    api.delete("/a", noop);
    api.patch("/a", noop);
    api.route("post", "/lower-case-method", noop);
    expect(declarationOf(api).routes.map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /a",
      "GET /a",
      "PUT /a",
      "DELETE /a",
      "PATCH /a",
      "POST /lower-case-method",
    ]);
    expect(declarationOf(api).isLoadBalanced).toBe(true);
  });

  it("rule 1: the method must be one of GET, POST, PUT, DELETE, PATCH", () => {
    const api = new Endpoint({ name: "my-api" });
    expect(message(() => api.route("trace", "/x", noop))).toBe(
      "method must be one of GET, POST, PUT, DELETE, PATCH, got: TRACE",
    );
    expect(message(() => api.route("OPTIONS", "/x", noop))).toBe(
      "method must be one of GET, POST, PUT, DELETE, PATCH, got: OPTIONS",
    );
  });

  it("rule 2: the path must start with /", () => {
    const api = new Endpoint({ name: "my-api" });
    expect(message(() => api.post("generate", noop))).toBe("path must start with '/', got: generate");
    expect(message(() => api.get("", noop))).toBe("path must start with '/', got: ");
  });

  it("/ping and /execute are reserved", () => {
    const api = new Endpoint({ name: "my-api" });
    expect(message(() => api.get("/ping", noop))).toBe(
      "path '/ping' is reserved by the framework. reserved paths: /execute, /ping",
    );
    expect(message(() => api.post("/execute", noop))).toBe(
      "path '/execute' is reserved by the framework. reserved paths: /execute, /ping",
    );
    expect(message(() => api.get("/ping/", noop))).toBe(
      "path '/ping/' is reserved by the framework. reserved paths: /execute, /ping",
    );
    api.get("/ping-extra", noop);
  });

  it("rule 3: a (method, path) pair is unique; the error names method, path and endpoint", () => {
    const api = new Endpoint({ name: "my-api" });
    api.post("/generate", function generate() {
      return 1;
    });
    expect(message(() => api.post("/generate", noop))).toBe(
      "duplicate route: POST /generate on endpoint 'my-api' (already registered to 'generate')",
    );
    // The same path with another method is a different route.
    api.get("/generate", noop);
  });

  it("rule 3 sees through parameter names and the toolkit's {name} spelling", () => {
    const api = new Endpoint({ name: "items" });
    api.get("/items/:id", noop);
    expect(message(() => api.get("/items/{item_id}", () => 1))).toBe(
      "duplicate route: GET /items/{item_id} on endpoint 'items' (already registered to 'noop')",
    );
    expect(message(() => api.get("/items/:other", () => 1))).toMatch(/^duplicate route: GET \/items\/:other/);
    expect(declarationOf(api).routes[0]?.path).toBe("/items/:id");
    api.get("/users/{user_id}", noop);
    expect(declarationOf(api).routes[1]?.path).toBe("/users/:user_id");
  });

  it("rule 4: a load-balanced endpoint needs at least one route, checked at start", () => {
    const api = new Endpoint({ name: "empty" });
    expect(message(() => declarationOf(api).assertRoutes())).toBe(
      "Load-balanced endpoints require route decorators: endpoint 'empty' has no routes. Add one with .get/.post/.put/.delete/.patch(path, fn), or use .handler(fn) for a queue-based endpoint.",
    );
  });

  it("routes need a name", () => {
    const api = new Endpoint({});
    expect(message(() => api.get("/x", noop))).toBe(
      "name is required for load-balanced endpoints. use new Endpoint({ name: 'my-api', ... }) when registering routes.",
    );
  });

  it("a route needs a function", () => {
    const api = new Endpoint({ name: "my-api" });
    expect(message(() => api.post("/x", "nope" as never))).toBe(
      "route POST /x: expected a function, got string",
    );
  });
});

describe("one endpoint, one pattern: routes or a queue handler", () => {
  it("no handler after routes", () => {
    const api = new Endpoint({ name: "my-api" });
    api.get("/x", noop);
    expect(message(() => api.handler(noop))).toBe(
      "cannot use Endpoint as a queue handler (.handler()) after registering routes with .get()/.post()/etc. use one pattern or the other.",
    );
  });

  it("no routes after a handler", () => {
    const api = new Endpoint({ name: "worker" });
    api.handler(noop);
    expect(message(() => api.post("/x", noop))).toBe(
      "cannot add routes after using Endpoint as a queue handler (.handler()). use one pattern or the other.",
    );
    expect(message(() => api.handler(noop))).toBe("endpoint 'worker' already has a queue handler");
  });

  it("the queue handler carries the endpoint's settings and concurrency", () => {
    const api = new Endpoint({
      name: "worker",
      maxConcurrency: 4,
      executionTimeoutMs: 5000,
      workers: [1, 2],
    });
    const definition = api.handler((job) => job.input);
    expect(definition.kind).toBe("handler");
    expect(definition.concurrency).toBe(4);
    expect((definition as EndpointHandlerDefinition).endpoint).toMatchObject({
      name: "worker",
      executionTimeoutMs: 5000,
      workers: [1, 2],
    });
    expect(declarationOf(api).queueHandler).toBe(definition);
    expect(registry().app).toBe(api);
    const own = new Endpoint({ name: "w2", maxConcurrency: 4 }).handler(noop, { concurrency: 2 });
    expect(own.concurrency).toBe(2);
  });

  it("declaring a route registers the endpoint as the app", () => {
    const api = new Endpoint({ name: "registered" });
    api.get("/x", noop);
    expect(registry().app).toBe(api);
  });
});

describe("WebSocket routes (docs/toolkit.md §4.6)", () => {
  const chat = async () => {};

  it("make the endpoint load-balanced, and follow the route rules", () => {
    const api = new Endpoint({ name: "ws-api" });
    api.websocket("/ws", chat);
    expect(declarationOf(api).isLoadBalanced).toBe(true);
    expect(() => declarationOf(api).assertRoutes()).not.toThrow();
    expect(declarationOf(api).sockets.map((s) => s.path)).toEqual(["/ws"]);
    expect(message(() => api.websocket("ws", chat))).toBe("path must start with '/', got: ws");
    expect(message(() => api.websocket("/ping", chat))).toMatch(
      /^path '\/ping' is reserved by the framework/,
    );
    expect(message(() => new Endpoint().websocket("/ws", chat))).toMatch(/^name is required/);
  });

  it("a WebSocket route is a GET: the same path cannot be both", () => {
    const api = new Endpoint({ name: "ws-api" });
    api.websocket("/ws", chat);
    expect(message(() => api.get("/ws", noop))).toBe(
      "duplicate route: GET /ws on endpoint 'ws-api' (already registered to 'chat')",
    );
    api.post("/ws", noop);
    api.get("/feed", noop);
    expect(message(() => api.websocket("/feed", chat))).toBe(
      "duplicate route: GET /feed on endpoint 'ws-api' (already registered to 'noop'); a WebSocket route is a GET",
    );
  });

  it("not beside a queue handler", () => {
    const queue = new Endpoint({ name: "worker" });
    queue.handler(noop);
    expect(message(() => queue.websocket("/ws", chat))).toBe(
      "cannot add routes after using Endpoint as a queue handler (.handler()). use one pattern or the other.",
    );
    const api = new Endpoint({ name: "ws-api" });
    api.websocket("/ws", chat);
    expect(message(() => api.handler(noop))).toMatch(/^cannot use Endpoint as a queue handler/);
  });
});
