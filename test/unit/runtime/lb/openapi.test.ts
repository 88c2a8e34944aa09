// A load-balanced worker serves its endpoint's OpenAPI document at /openapi.json, unless a route claims the path.
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { Endpoint } from "../../../../src/index.js";
import { createLogger } from "../../../../src/log/index.js";
import { RouteServer } from "../../../../src/runtime/lb/server.js";

const servers: RouteServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(0)));
});

async function serve(api: Endpoint): Promise<RouteServer> {
  const log = createLogger({ level: "ERROR", json: false, destination: { write: () => true } });
  const server = new RouteServer(api, { log });
  servers.push(server);
  expect(await server.start()).toBe(true);
  return server;
}

describe("GET /openapi.json on a load-balanced worker", () => {
  it("answers the document of the endpoint's routes, with the body schema", async () => {
    const api = new Endpoint({ name: "summary-api" });
    api.post("/summarize", ({ text }) => ({ summary: text }), { body: z.object({ text: z.string() }) });
    const server = await serve(api);
    const answer = await server.app.inject({ method: "GET", url: "/openapi.json" });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers["content-type"]).toBe("application/json; charset=utf-8");
    const document = answer.json();
    expect(document.openapi).toBe("3.1.0");
    expect(document.info.title).toBe("summary-api");
    expect(document.paths["/summarize"].post.requestBody.content["application/json"].schema).toEqual({
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    });
  });

  it("leaves the path to a route of the app that declares it", async () => {
    const api = new Endpoint({ name: "own-doc" });
    api.get("/openapi.json", () => ({ mine: true }));
    const server = await serve(api);
    expect((await server.app.inject({ method: "GET", url: "/openapi.json" })).json()).toEqual({ mine: true });
  });
});
