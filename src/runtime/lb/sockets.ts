// WebSocket routes of a load-balanced endpoint ("Load balancing endpoints also support WebSocket connections":
// serverless/load-balancing/build-a-worker), served through @fastify/websocket.
import websocketPlugin from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import type { WebSocket } from "ws";
import type { RouteSocket, SocketRouteDefinition } from "../../app/sockets.js";
import { messageSocket } from "../../http/socket.js";
import type { Logger } from "../../log/index.js";

function routeSocket(ws: WebSocket, url: string): RouteSocket {
  const parsed = new URL(url, "http://worker");
  return Object.assign(messageSocket(ws), {
    path: parsed.pathname,
    query: Object.fromEntries(parsed.searchParams),
  });
}

/** Registers the endpoint's WebSocket routes on its route server (before it listens). */
export function addSocketRoutes(
  app: FastifyInstance,
  routes: readonly SocketRouteDefinition[],
  log: Logger,
): void {
  if (routes.length === 0) return;
  app.register(async (scope) => {
    await scope.register(websocketPlugin);
    for (const route of routes) {
      scope.get(route.path, { websocket: true }, (ws, request) => {
        Promise.resolve()
          .then(() => route.fn(routeSocket(ws, request.url)))
          .then(
            () => ws.close(1000),
            (err: Error) => {
              log.error(`WebSocket ${route.path} failed: ${err.stack ?? err.message}`);
              // 1011: the server met an unexpected condition (RFC 6455 §7.4.1).
              ws.close(1011, err.message.slice(0, 120));
            },
          );
      });
    }
  });
}
