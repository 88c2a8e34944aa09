// The health check where RunPod's load balancer polls it: HEALTH_CHECK_PATH (default /ping) on PORT_HEALTH
// (default PORT), answered as /ping answers: 200 ready, 204 initializing (serverless/load-balancing/overview).
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { Logger } from "../../log/index.js";

export const PING_PATH = "/ping";

/** The worker's log line naming its health port; the local platform reads it (src/platform/workers/lb-proxy.ts). */
export const healthLine = (host: string, port: number, path: string) =>
  `Health checks on http://${host}:${port}${path}`;

/**
 * Serves `path` on the route server as `/ping` answers, unless it is `/ping` or a GET route of the app (then
 * that route is the health check, as for a server that has its own /health). Call before the app listens.
 */
export function addHealthPath(
  app: FastifyInstance,
  path: string,
  routes: readonly { method: string; path: string }[],
): void {
  if (path === PING_PATH || routes.some((r) => r.method === "GET" && r.path === path)) return;
  app.get(path, async (_request, reply) => {
    const ping = await app.inject({ method: "GET", url: PING_PATH });
    return reply
      .code(ping.statusCode)
      .type(String(ping.headers["content-type"] ?? "application/json"))
      .send(ping.body);
  });
}

export interface HealthListener {
  readonly port: number;
  close(): Promise<void>;
}

/** A listener on its own port (PORT_HEALTH) that answers GET `path` with what the route server answers there. */
export async function listenHealth(
  app: FastifyInstance,
  options: { host: string; port: number; path: string; log: Logger },
): Promise<HealthListener> {
  const { path, log } = options;
  const answer = (status: number, body: string, type = "application/json; charset=utf-8") => ({
    status,
    body,
    type,
  });
  const respond = async (req: IncomingMessage, res: ServerResponse) => {
    const url = (req.url ?? "/").split("?")[0];
    let out = answer(404, JSON.stringify({ error: `This is the health port: it serves only GET ${path}` }));
    if (url === path && (req.method === "GET" || req.method === "HEAD")) {
      // The app closing (shutdown) cannot answer: that is unhealthy, as /ping's 503 says.
      out = await app.inject({ method: "GET", url: path }).then(
        (r) => answer(r.statusCode, r.body, String(r.headers["content-type"] ?? "application/json")),
        () => answer(503, JSON.stringify({ status: "unhealthy", state: "STOPPING" })),
      );
    }
    res.writeHead(out.status, out.status === 204 ? {} : { "content-type": out.type });
    res.end(out.status === 204 || req.method === "HEAD" ? undefined : out.body);
  };
  const server = createServer((req, res) => {
    respond(req, res).catch((err: Error) => {
      log.error(`Health check failed: ${err.message}`);
      res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : options.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
