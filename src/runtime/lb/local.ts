// `flash run` on a load-balanced endpoint: send the requests test_input.json describes, through the real server.
import { existsSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { dirname, join, resolve } from "node:path";
import { declarationOf, type Endpoint } from "../../app/endpoint.js";
import { isEndpointConfigError } from "../../app/settings.js";
import type { Logger } from "../../log/index.js";
import type { WorkerConfig } from "../options.js";
import { RouteServer } from "./server.js";

/** One request of a load-balanced test input. */
export interface TestRequest {
  method?: string;
  path: string;
  body?: unknown;
  query?: Record<string, string>;
  headers?: Record<string, string>;
}

const EXAMPLE = '{"requests": [{"method": "POST", "path": "/echo", "body": {"hello": "world"}}]}';

function isRequest(value: unknown): value is TestRequest {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { path?: unknown }).path === "string" &&
    ["string", "undefined"].includes(typeof (value as { method?: unknown }).method)
  );
}

/** The requests in `{"requests": [...]}` or a single `{"method", "path", ...}`, or an error message. */
export function parseTestRequests(parsed: unknown): TestRequest[] | string {
  if (typeof parsed !== "object" || parsed === null) return `expected a JSON object like ${EXAMPLE}`;
  if ("input" in parsed && !("requests" in parsed) && !("path" in parsed)) {
    return `this is a load-balanced endpoint: its test input describes HTTP requests, not a queue job's {"input": ...}. e.g. ${EXAMPLE}`;
  }
  const list = "requests" in parsed ? (parsed as { requests: unknown }).requests : [parsed];
  if (!Array.isArray(list) || list.length === 0 || !list.every(isRequest)) {
    return `expected {"requests": [{"method", "path", "body"?, "query"?, "headers"?}, ...]}, e.g. ${EXAMPLE}`;
  }
  return list;
}

function readTestInput(config: WorkerConfig): { text: string; source: string } | string {
  if (config.testInput !== undefined) return { text: config.testInput, source: "--test_input" };
  const candidates = [resolve("test_input.json")];
  if (config.file) candidates.push(join(dirname(resolve(config.file)), "test_input.json"));
  const source = candidates.find((path) => existsSync(path));
  if (!source) {
    return `test_input.json not found (looked for ${candidates.join(" and ")}); describe the requests to send, e.g. ${EXAMPLE}`;
  }
  return { text: readFileSync(source, "utf8"), source };
}

/**
 * Sends each test request to the endpoint in process (no socket); each answer's body goes to `print` (stdout),
 * one per line, and its status to the log. 0 when all are < 400.
 */
export async function runLocalRequests(
  endpoint: Endpoint,
  config: WorkerConfig,
  log: Logger,
  print: (text: string) => void,
): Promise<number> {
  try {
    declarationOf(endpoint).assertRoutes();
  } catch (err) {
    if (isEndpointConfigError(err)) {
      log.error(err.message);
      return 1;
    }
    throw err;
  }
  const input = readTestInput(config);
  if (typeof input === "string") {
    log.error(input);
    return 1;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(input.text);
  } catch (err) {
    log.error(`Test input from ${input.source} is not valid JSON: ${(err as Error).message}`);
    return 1;
  }
  const requests = parseTestRequests(parsed);
  if (typeof requests === "string") {
    log.error(`Test input from ${input.source}: ${requests}`);
    return 1;
  }
  const server = new RouteServer(endpoint, { log, server: endpoint.server });
  try {
    // A real port on loopback: the requests take the path a client's do, a model server's proxy included.
    await server.app.listen({ host: "127.0.0.1", port: 0 });
    if (!(await server.start())) return 1;
    const { port } = server.app.server.address() as AddressInfo;
    let failed = 0;
    for (const request of requests) {
      const method = (request.method ?? "GET").toUpperCase();
      const url = new URL(request.path, `http://127.0.0.1:${port}`);
      for (const [key, value] of Object.entries(request.query ?? {})) url.searchParams.set(key, value);
      const json: Record<string, string> =
        request.body === undefined ? {} : { "content-type": "application/json" };
      const response = await fetch(url, {
        method,
        headers: { ...json, ...request.headers },
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
      });
      const body = await response.text();
      const line = `${method} ${request.path} -> ${response.status}`;
      if (response.status >= 400) {
        failed++;
        log.error(`${line} ${body}`);
      } else {
        log.info(line);
        print(`${body}\n`);
      }
    }
    log.info(
      `Local testing complete: ${requests.length - failed} of ${requests.length} request(s) succeeded.`,
    );
    return failed === 0 ? 0 : 1;
  } finally {
    await server.close(0);
  }
}
