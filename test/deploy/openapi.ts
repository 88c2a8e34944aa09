// The vendored REST v2 document (test/fixtures/runpod-rest-v2.openapi.json) as a judge: request bodies and
// responses checked with a JSON Schema 2020-12 validator, and a proxy that checks every exchange between a
// client (the flash CLI) and a server (the local platform) as it passes.
import { readFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Validator } from "@cfworker/json-schema";
import { ROOT } from "../process.js";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Operation {
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, { $ref?: string; content?: Record<string, { schema?: Json }> }>;
}

const doc = JSON.parse(readFileSync(join(ROOT, "test/fixtures/runpod-rest-v2.openapi.json"), "utf8")) as {
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, Json>>;
};

/**
 * Examples carry `id` fields that a validator would take for schema ids: the schemas are judged without them.
 * `format: uri` is dropped too: 2020-12 makes format an annotation, and the document's own request URLs
 * (`…/status/{job_id}`) are templates, not URIs; date-time and the rest stay asserted.
 */
function withoutExamples(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutExamples);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value)
        .filter(
          ([key, inner]) => key !== "examples" && key !== "example" && !(key === "format" && inner === "uri"),
        )
        .map(([key, inner]) => [key, withoutExamples(inner)]),
    );
  }
  return value;
}

const components = withoutExamples(doc.components as unknown as Json);
const validators = new Map<string, Validator>();

/** Errors of `value` against a schema of the document (`{$ref: …}` or inline); empty when it conforms. */
export function schemaErrors(schema: Json, value: unknown): string[] {
  const key = JSON.stringify(schema);
  let validator = validators.get(key);
  if (!validator) {
    validator = new Validator(
      { components, ...(withoutExamples(schema) as Record<string, Json>) } as never,
      "2020-12",
      false,
    );
    validators.set(key, validator);
  }
  const result = validator.validate(value);
  return result.valid ? [] : result.errors.map((e) => `${e.instanceLocation} ${e.error}`);
}

/** The document's operation for a concrete path (templates like /v2/serverless/{id} matched segment by segment). */
export function operationFor(
  method: string,
  path: string,
): { template: string; operation: Operation } | undefined {
  const bare = path.split("?")[0]!;
  const segments = bare.split("/");
  for (const [template, item] of Object.entries(doc.paths)) {
    const parts = template.split("/");
    if (parts.length !== segments.length) continue;
    if (!parts.every((part, i) => part.startsWith("{") || part === segments[i])) continue;
    // A literal path (/v2/registries/delegations) wins over a template that also matches.
    const operation = item[method.toLowerCase()];
    if (operation) {
      const literal = Object.keys(doc.paths).find((t) => t === bare && doc.paths[t]?.[method.toLowerCase()]);
      if (literal && literal !== template) continue;
      return { template, operation };
    }
  }
  return undefined;
}

/** Violations of a request: unknown operation, or a JSON body the document rejects. */
export function requestViolations(method: string, path: string, body: unknown): string[] {
  const found = operationFor(method, path);
  if (!found) return [`${method} ${path}: no such operation in the document`];
  const schema = found.operation.requestBody?.content["application/json"]?.schema;
  if (!schema) return body === undefined ? [] : [`${method} ${found.template}: the document takes no body`];
  if (body === undefined) return [`${method} ${found.template}: a body is required`];
  return schemaErrors(schema, body).map((e) => `${method} ${found.template} request: ${e}`);
}

/** Violations of a response: a status the operation does not list (without a default), or a body it rejects. */
export function responseViolations(
  method: string,
  path: string,
  status: number,
  contentType: string,
  body: string,
): string[] {
  const found = operationFor(method, path);
  if (!found) return [`${method} ${path}: no such operation in the document`];
  const where = `${method} ${found.template} → ${status}`;
  let response = found.operation.responses[String(status)] ?? found.operation.responses.default;
  if (!response) return [`${where}: status not in the document`];
  if (response.$ref) {
    const name = response.$ref.split("/").pop()!;
    response = (doc.components.responses as Record<string, typeof response>)[name]!;
  }
  if (!response.content)
    return body.length === 0 ? [] : [`${where}: the document has no body here, got ${body.slice(0, 80)}`];
  const type = contentType.split(";")[0]!.trim();
  const declared = response.content[type];
  if (!declared)
    return [`${where}: content type ${type}, the document says ${Object.keys(response.content).join(", ")}`];
  if (type === "text/event-stream") return sseViolations(where, body);
  if (!declared.schema) return [];
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return [`${where}: body is not JSON: ${body.slice(0, 80)}`];
  }
  return schemaErrors(declared.schema, value).map((e) => `${where}: ${e}`);
}

/** Each event has an id line and a JSON data line with ts, source and line (the operation's description). */
function sseViolations(where: string, text: string): string[] {
  const out: string[] = [];
  for (const event of text.split("\n\n")) {
    if (!event.trim() || event.startsWith(":")) continue;
    const id = /^id: (.+)$/m.exec(event)?.[1];
    const data = /^data: (.+)$/m.exec(event)?.[1];
    if (!id || !data) {
      out.push(`${where}: event without id or data: ${event.slice(0, 80)}`);
      continue;
    }
    const parsed = JSON.parse(data) as Record<string, unknown>;
    if (
      typeof parsed.ts !== "string" ||
      typeof parsed.line !== "string" ||
      !["container", "system"].includes(String(parsed.source))
    ) {
      out.push(`${where}: event data is not {ts, source, line}: ${data}`);
    }
  }
  return out;
}

export interface Exchange {
  method: string;
  path: string;
  status: number;
  request?: unknown;
}

/**
 * A proxy on 127.0.0.1 to `target`: every exchange judged by the document. Requests that break it are in
 * `requestViolations` (a test may send bad ones on purpose), responses that break it in `violations`.
 */
export interface ConformanceProxy {
  url: string;
  exchanges: Exchange[];
  violations: string[];
  requestViolations: string[];
  close(): Promise<void>;
}

export async function conformanceProxy(target: string): Promise<ConformanceProxy> {
  const upstream = new URL(target);
  const exchanges: Exchange[] = [];
  const violations: string[] = [];
  const requestErrors: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const method = req.method ?? "GET";
      const path = req.url ?? "/";
      const raw = Buffer.concat(chunks);
      let body: unknown;
      if (raw.length > 0) {
        try {
          body = JSON.parse(raw.toString("utf8"));
        } catch {
          requestErrors.push(`${method} ${path}: request body is not JSON`);
        }
      }
      // A Pod's proxy host (<pod_id>-<port>.localhost) is the Pod's app, not the API: passed on as it is, unjudged.
      const podHost = /^[^.]+\.localhost(?::\d+)?$/i.test(req.headers.host ?? "");
      // So is the proxy's path form, /pods/<pod_id>/<port>/<path>.
      const podApp = podHost || path.startsWith("/pods/");
      if (!podApp) requestErrors.push(...requestViolations(method, path, body));
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method,
          path,
          headers: podHost ? req.headers : { ...req.headers, host: upstream.host },
        },
        (answer: IncomingMessage) => {
          const status = answer.statusCode ?? 502;
          const contentType = String(answer.headers["content-type"] ?? "");
          exchanges.push({ method, path, status, ...(body === undefined ? {} : { request: body }) });
          res.writeHead(status, answer.headers);
          const received: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => {
            received.push(chunk);
            res.write(chunk);
          });
          const judge = () =>
            podApp ||
            violations.push(
              ...responseViolations(
                method,
                path,
                status,
                contentType,
                Buffer.concat(received).toString("utf8"),
              ),
            );
          answer.on("end", () => {
            judge();
            res.end();
          });
          // A log stream the client ends: what passed is judged.
          res.on("close", () => {
            if (!answer.complete) {
              judge();
              answer.destroy();
            }
          });
        },
      );
      forward.on("error", (err) => {
        res.writeHead(502).end(err.message);
      });
      forward.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges,
    violations,
    requestViolations: requestErrors,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
