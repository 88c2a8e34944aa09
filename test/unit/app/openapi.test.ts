// The endpoint's OpenAPI document (src/app/openapi.ts): valid OpenAPI 3.1 by an off-the-shelf validator, with the
// schemas the app declares converted by their libraries (zod's Standard JSON Schema, valibot's converter).
import { Validator } from "@seriousme/openapi-schema-validator";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { Endpoint } from "../../../src/app/endpoint.js";
import { jsonSchemaOf, type OpenApiDocument, openApiDocument } from "../../../src/app/openapi.js";
import { defineHandler } from "../../../src/job/definition.js";

async function valid(document: OpenApiDocument): Promise<void> {
  const result = await new Validator().validate(structuredClone(document) as never);
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
}

const Input = z.object({ text: z.string(), words: z.number().int().default(20) });

describe("openApiDocument", () => {
  it("a queue handler with a zod schema: the queue API's envelopes around the schema's input", async () => {
    const definition = defineHandler(async () => ({ summary: "" }), { input: Input });
    const document = await openApiDocument(definition, "summarizer");
    await valid(document);
    expect(Object.keys(document.paths).sort()).toEqual(
      ["/cancel/{job_id}", "/health", "/run", "/runsync", "/status/{job_id}", "/stream/{job_id}"].sort(),
    );
    expect(document.components.schemas.Input).toEqual({
      type: "object",
      properties: {
        text: { type: "string" },
        // Optional for a caller: the schema fills it in.
        words: {
          type: "integer",
          default: 20,
          minimum: Number.MIN_SAFE_INTEGER,
          maximum: Number.MAX_SAFE_INTEGER,
        },
      },
      required: ["text"],
    });
    expect(document.components.schemas.JobRequest).toMatchObject({
      required: ["input"],
      properties: { input: { $ref: "#/components/schemas/Input" } },
    });
  });

  it("a handler without a schema gets the honest {} input schema", async () => {
    const document = await openApiDocument(
      defineHandler(() => 1),
      "plain",
    );
    await valid(document);
    expect(document.components.schemas.Input).toEqual({});
    // The validator refuses what is not OpenAPI 3.1: a document without its info.
    const { info: _info, ...broken } = document;
    expect((await new Validator().validate(structuredClone(broken) as never)).valid).toBe(false);
  });

  it("a load-balanced Endpoint: each route with its path parameters, body or query, from zod and valibot", async () => {
    const api = new Endpoint({ name: "summary-api" });
    api.post("/summarize", ({ text }) => ({ summary: text }), { body: z.object({ text: z.string() }) });
    api.get("/hello/:name", ({ name }: { name: string }) => ({ hello: name }), {
      body: v.object({ name: v.string(), lang: v.optional(v.picklist(["en", "fr"])) }),
    });
    api.put("/items/{id}", ({ id }) => ({ id }), {
      body: v.object({ id: v.string(), title: v.pipe(v.string(), v.minLength(1)) }),
    });
    api.delete("/items/{id}", () => ({ deleted: true }));
    const document = await openApiDocument(api, "summary-api");
    await valid(document);
    expect(Object.keys(document.paths)).toEqual(["/summarize", "/hello/{name}", "/items/{id}"]);
    expect(document.paths["/summarize"]?.post?.requestBody).toEqual({
      required: true,
      content: {
        "application/json": {
          schema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        },
      },
    });
    expect(document.paths["/hello/{name}"]?.get?.parameters).toEqual([
      { name: "name", in: "path", required: true, schema: { type: "string" } },
      { name: "lang", in: "query", required: false, schema: { enum: ["en", "fr"], type: "string" } },
    ]);
    expect(document.paths["/items/{id}"]?.put?.requestBody).toMatchObject({
      content: {
        "application/json": { schema: { properties: { title: { type: "string", minLength: 1 } } } },
      },
    });
    expect(Object.keys(document.paths["/items/{id}"] ?? {})).toEqual(["put", "delete"]);
  });

  it("jsonSchemaOf: {} for a schema its library cannot convert", async () => {
    const custom = {
      "~standard": { version: 1, vendor: "mine", validate: (value: unknown) => ({ value }) },
    } as const;
    expect(await jsonSchemaOf(custom)).toEqual({});
    expect(await jsonSchemaOf(undefined)).toEqual({});
  });
});
