// An app's OpenAPI 3.1 document, from what it declares: routes and their body schemas, the queue API's
// envelopes around the handler's input schema, and the OpenAI-compatible paths of model servers.

import type { StandardSchemaV1 } from "../job/validate.js";
import { schemaOf } from "../job/validate.js";
import { VERSION } from "../version.js";
import { declarationOf } from "./endpoint.js";
import { serverOf } from "./model-server/handler.js";
import { isOpenAICompatible } from "./openai.js";
import type { App } from "./registry.js";

type Json = Record<string, unknown>;

/** An OpenAPI 3.1 document, as JSON. */
export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Json>>;
  components: { schemas: Record<string, Json>; securitySchemes: Record<string, Json> };
  security: Record<string, string[]>[];
}

/** Where a load-balanced worker, and the local platform under /v2/<id>/ and /lb/<id>/, serve the document. */
export const OPENAPI_PATH = "/openapi.json";

/** The converter a valibot schema needs (valibot's ~standard has no jsonSchema): the app's own, when installed. */
const VALIBOT_CONVERTER = "@valibot/to-json-schema";

/**
 * The JSON Schema of what a Standard Schema accepts: the library's own converter (Standard JSON Schema's
 * `~standard.jsonSchema`, zod 4 and arktype; `@valibot/to-json-schema` for valibot), else `{}`, which is honest:
 * any JSON value may be sent, and the schema still checks it.
 */
export async function jsonSchemaOf(schema: StandardSchemaV1 | undefined): Promise<Json> {
  if (schema === undefined) return {};
  const props = schema["~standard"] as StandardSchemaV1["~standard"] & {
    jsonSchema?: { input?: (options: { target: string }) => Json };
  };
  try {
    if (typeof props.jsonSchema?.input === "function")
      return clean(props.jsonSchema.input({ target: "draft-2020-12" }));
    if (props.vendor === "valibot") {
      const converter = (await import(VALIBOT_CONVERTER)) as {
        toJsonSchema: (schema: unknown, config?: Json) => Json;
      };
      return clean(converter.toJsonSchema(schema, { errorMode: "ignore" }));
    }
  } catch {
    // A schema its library cannot express (a transform, a custom check) or no converter: described as any value.
  }
  return {};
}

/** `$schema` belongs to a document, not to a schema inside OpenAPI's (whose dialect is 2020-12 already). */
function clean(schema: Json): Json {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

const JOB_STATUS = {
  type: "string",
  enum: ["IN_QUEUE", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"],
};

/** The queue API's envelopes (docs/protocol.md §16) around the handler's input and output. */
function queuePaths(): OpenApiDocument["paths"] {
  const jobId = { name: "job_id", in: "path", required: true, schema: { type: "string" } };
  const job = (description: string) => ({
    description,
    content: { "application/json": { schema: { $ref: "#/components/schemas/Job" } } },
  });
  const submit = (summary: string, answer: string) => ({
    summary,
    requestBody: {
      required: true,
      content: { "application/json": { schema: { $ref: "#/components/schemas/JobRequest" } } },
    },
    responses: {
      "200": job(answer),
      "400": {
        description: "The body is not a job request (or, where validation is on, the input fails the schema)",
      },
    },
  });
  return {
    "/run": { post: submit("Queue a job", "The job's id and status") },
    "/runsync": {
      post: {
        ...submit("Run a job and wait for it", "The finished job, or its status when the wait ran out"),
        parameters: [
          {
            name: "wait",
            in: "query",
            required: false,
            schema: { type: "integer", minimum: 1000, maximum: 300000 },
          },
        ],
      },
    },
    "/status/{job_id}": {
      get: {
        summary: "A job's status and output",
        parameters: [jobId],
        responses: { "200": job("The job") },
      },
    },
    "/stream/{job_id}": {
      get: {
        summary: "A streaming job's chunks so far",
        parameters: [jobId],
        responses: {
          "200": {
            description: "The chunks produced since the last call",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  required: ["status", "stream"],
                  properties: {
                    status: JOB_STATUS,
                    stream: {
                      type: "array",
                      items: {
                        type: "object",
                        properties: { output: { $ref: "#/components/schemas/Output" } },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    },
    "/cancel/{job_id}": {
      post: { summary: "Cancel a job", parameters: [jobId], responses: { "200": job("The cancelled job") } },
    },
    "/health": {
      get: {
        summary: "Job and worker counters",
        responses: {
          "200": { description: "Counters", content: { "application/json": { schema: { type: "object" } } } },
        },
      },
    },
  };
}

/** The job envelope's schemas, with the handler's input and (unknown at run time) output. */
function queueSchemas(input: Json): Record<string, Json> {
  return {
    Input: input,
    Output: { description: "What the handler returns (a generator: its chunks)" },
    JobRequest: {
      type: "object",
      required: ["input"],
      properties: {
        input: { $ref: "#/components/schemas/Input" },
        webhook: { type: "string", format: "uri" },
        policy: {
          type: "object",
          properties: {
            executionTimeout: { type: "integer" },
            ttl: { type: "integer" },
            lowPriority: { type: "boolean" },
          },
        },
      },
    },
    Job: {
      type: "object",
      required: ["id", "status"],
      properties: {
        id: { type: "string" },
        status: JOB_STATUS,
        output: { $ref: "#/components/schemas/Output" },
        error: {},
        delayTime: { type: "integer" },
        executionTime: { type: "integer" },
        workerId: { type: "string" },
      },
    },
  };
}

/** The OpenAI-compatible paths: `/openai/v1/…` of a queue endpoint, `/v1/…` proxied to a load-balanced one's server. */
function openaiPaths(prefix: string): OpenApiDocument["paths"] {
  const body = (summary: string) => ({
    summary,
    requestBody: {
      required: true,
      content: { "application/json": { schema: { type: "object", required: ["model"] } } },
    },
    responses: {
      "200": {
        description: "The completion, or Server-Sent Events when `stream` is true",
        content: {
          "application/json": { schema: { type: "object" } },
          "text/event-stream": { schema: { type: "string" } },
        },
      },
    },
  });
  return {
    [`${prefix}/chat/completions`]: { post: body("A chat completion") },
    [`${prefix}/completions`]: { post: body("A text completion") },
    [`${prefix}/models`]: {
      get: {
        summary: "The served models",
        responses: {
          "200": {
            description: "The model list",
            content: { "application/json": { schema: { type: "object" } } },
          },
        },
      },
    },
  };
}

/** `/hello/:name` as OpenAPI writes it, `/hello/{name}`, and the names of its parameters. */
function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const written = path.replace(
    /:([A-Za-z0-9_]+)|\{([^}]+)\}/g,
    (_m, colon: string | undefined, brace: string | undefined) => {
      const name = (colon ?? brace) as string;
      params.push(name);
      return `{${name}}`;
    },
  );
  return { path: written, params };
}

async function routePaths(app: App): Promise<OpenApiDocument["paths"]> {
  const paths: OpenApiDocument["paths"] = {};
  if (app.kind !== "endpoint") return paths;
  for (const route of declarationOf(app).routes) {
    const { path, params } = openApiPath(route.path);
    const schema = await jsonSchemaOf(schemaOf(route.fn));
    const operation: Json = {
      operationId: `${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? "").toUpperCase())}`,
      responses: {
        "200": { description: "The route's answer", content: { "application/json": { schema: {} } } },
        "400": {
          description: "The request fails the route's schema",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Refusal" } } },
        },
      },
    };
    const parameters: Json[] = params.map((name) => ({
      name,
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    if (route.method === "GET" || route.method === "DELETE") {
      // Arguments come from the query: each top-level property of the schema is a query parameter.
      const properties = (schema.properties ?? {}) as Record<string, Json>;
      const required = new Set((schema.required ?? []) as string[]);
      for (const [name, property] of Object.entries(properties)) {
        if (!params.includes(name))
          parameters.push({ name, in: "query", required: required.has(name), schema: property });
      }
    } else {
      operation.requestBody = { required: true, content: { "application/json": { schema } } };
    }
    if (parameters.length > 0) operation.parameters = parameters;
    paths[path] ??= {};
    (paths[path] as Record<string, Json>)[route.method.toLowerCase()] = operation;
  }
  return paths;
}

/** The document of one app: its routes (load-balanced) or the queue API around its handler's input schema. */
export async function openApiDocument(app: App, title: string): Promise<OpenApiDocument> {
  const declaration = app.kind === "endpoint" ? declarationOf(app) : undefined;
  const queue = app.kind === "handler" ? app : declaration?.queueHandler;
  const loadBalanced = declaration?.isLoadBalanced ?? false;
  const model = serverOf(app);
  const document: OpenApiDocument = {
    openapi: "3.1.0",
    info: {
      title,
      version: VERSION,
      description: `Generated by flash-worker ${VERSION} from the app's declarations.`,
    },
    paths: {},
    components: {
      schemas: {
        Refusal: {
          type: "object",
          properties: {
            error: { type: "string" },
            issues: {
              type: "array",
              items: {
                type: "object",
                properties: { path: { type: "string" }, message: { type: "string" } },
              },
            },
          },
        },
      },
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
    },
    security: [{ bearer: [] }],
  };
  if (loadBalanced) {
    Object.assign(document.paths, await routePaths(app));
    if (model) Object.assign(document.paths, openaiPaths("/v1"));
  } else if (queue) {
    Object.assign(document.paths, queuePaths());
    Object.assign(document.components.schemas, queueSchemas(await jsonSchemaOf(schemaOf(queue.fn))));
    if (model || isOpenAICompatible(queue.fn)) Object.assign(document.paths, openaiPaths("/openai/v1"));
  }
  return document;
}
