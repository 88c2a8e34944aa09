// Small real HTTP servers on 127.0.0.1 for the client's failure cases: wrong answers, resets, a closed port.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger, type Logger } from "../../src/log/index.js";

export interface TestServer {
  url: string;
  /** Requests received, as "METHOD /path". */
  requests: string[];
  close(): Promise<void>;
}

export async function startServer(
  handle: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<TestServer> {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    handle(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL on 127.0.0.1 where nothing listens: a server's port, after the server is closed. */
export async function closedPortUrl(): Promise<string> {
  const server = await startServer((_q, r) => r.end());
  await server.close();
  return server.url;
}

export function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

/** A logger whose lines land in an array. */
export function captureLog(level: "DEBUG" | "INFO" | "WARN" = "DEBUG"): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = createLogger({
    level,
    json: false,
    destination: { write: (line) => lines.push(line.trimEnd()) },
  });
  return { log, lines };
}

/** Retries without real waiting: the tests are about what happens, not how long. */
export const FAST_RETRY = { attempts: 3, baseMs: 1, maxMs: 1 };
