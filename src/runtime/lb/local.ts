// `flash run` on a load-balanced endpoint: send the requests test_input.json describes, through the real server.
import type { AddressInfo } from "node:net";
import { declarationOf, type Endpoint } from "../../app/endpoint.js";
import { isEndpointConfigError } from "../../app/settings.js";
import type { Logger } from "../../log/index.js";
import type { WorkerConfig } from "../config/options.js";
import { readTestInput } from "../config/test-input.js";
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

/**
 * The test requests, checked before anything starts (a model server's load can take minutes): --test_input,
 * else test_input.json beside the handler file, else ./test_input.json. Undefined, with the reason logged, when
 * the routes are misdeclared or the input is missing or not a load-balanced one.
 */
export function prepareLocalRequests(
  endpoint: Endpoint,
  config: WorkerConfig,
  log: Logger,
): TestRequest[] | undefined {
  try {
    declarationOf(endpoint).assertRoutes();
  } catch (err) {
    if (isEndpointConfigError(err)) {
      log.error(err.message);
      return undefined;
    }
    throw err;
  }
  const read = readTestInput(config);
  if (typeof read === "string") {
    log.error(read);
    return undefined;
  }
  if ("missing" in read) {
    log.error(
      `test_input.json not found (looked for ${read.missing.join(" and ")}); describe the requests to send, e.g. ${EXAMPLE}`,
    );
    return undefined;
  }
  const requests = parseTestRequests(read.parsed);
  if (typeof requests === "string") {
    log.error(`Test input from ${read.source}: ${requests}`);
    return undefined;
  }
  log.info(`Test input: ${read.source}`);
  return requests;
}

/**
 * Sends each test request to the endpoint over loopback; each answer's body goes to `print` (stdout),
 * one per line, and its status to the log. 0 when all are < 400.
 */
export async function runLocalRequests(
  endpoint: Endpoint,
  requests: TestRequest[],
  log: Logger,
  print: (text: string) => void,
): Promise<number> {
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
