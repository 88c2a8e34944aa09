// flash dev serves each endpoint's OpenAPI document (/v2/<id>/openapi.json, /lb/<id>/openapi.json through the
// worker), valid OpenAPI 3.1; and the client typed by the same app calls it (docs/design.md §4.12).
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { endpoint } from "../../src/client/index.js";
import { flash, freePort } from "../process.js";
import type * as lbApp from "../unit/client/contract/lb-app.js";
import type * as queueApp from "../unit/client/contract/queue-app.js";

const QUEUE = "test/unit/client/contract/queue-app.ts";
const LB = "test/unit/client/contract/lb-app.ts";

describe("flash dev: the OpenAPI document and the typed client", () => {
  it("serves both endpoints' documents, and typed calls reach them", async () => {
    const port = await freePort();
    const dev = flash(["dev", QUEUE, LB, "--port", String(port), "--api-key", "k3", "--workers", "1,1"]);
    try {
      await dev.waitForLine(/^Ready\. Try: curl/, 60_000);
      const out = dev.stdout.join("\n");
      const queueId = /queue-app\.ts is endpoint "([^"]+)"/.exec(out)?.[1];
      expect(queueId).toBeDefined();
      expect(out).toContain(`is load-balanced endpoint "summary-api"`);
      const base = `http://127.0.0.1:${port}`;
      const get = (path: string) => fetch(`${base}${path}`, { headers: { Authorization: "Bearer k3" } });

      const queueDoc = await get(`/v2/${queueId}/openapi.json`);
      expect(queueDoc.status).toBe(200);
      const queueJson = (await queueDoc.json()) as { components: { schemas: Record<string, unknown> } };
      expect((await new Validator().validate(queueJson as never)).valid).toBe(true);
      expect(queueJson.components.schemas.Input).toMatchObject({ required: ["text"] });

      const lbDoc = await get("/lb/summary-api/openapi.json");
      expect(lbDoc.status).toBe(200);
      const lbJson = (await lbDoc.json()) as { paths: Record<string, unknown> };
      expect((await new Validator().validate(lbJson as never)).valid).toBe(true);
      expect(Object.keys(lbJson.paths)).toEqual(["/summarize", "/hello/{name}", "/items/{id}"]);

      const options = { baseUrl: base, apiKey: "k3", env: {} };
      const ep = endpoint<typeof queueApp>(queueId as string, options);
      const job = await ep.runsync({ text: "a long text", words: 6 });
      expect(job.output).toEqual({ summary: "a long", words: 6 });
      expect(await ep.call("scale", [1, 2], 3)).toEqual([3, 6]);
      const api = endpoint<typeof lbApp>("summary-api", options);
      expect(await api.post("/summarize", { text: "hello world", words: 5 })).toEqual({
        summary: "hello",
        words: 5,
      });
      expect(await api.get("/hello/ada", { lang: "fr" })).toEqual({ hello: "ada", lang: "fr" });
      expect(await api.put("/items/42", { title: "new" })).toEqual({ id: "42", title: "new", updated: true });
    } finally {
      dev.child.kill("SIGINT");
      await dev.exited;
    }
  });
});
