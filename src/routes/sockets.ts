// WebSocket routes of a load-balanced endpoint ("Load balancing endpoints also support WebSocket connections":
// serverless/load-balancing/build-a-worker), served through @fastify/websocket.
import websocketPlugin from "@fastify/websocket";
import type { FastifyInstance } from "fastify";
import type { WebSocket } from "ws";
import { type MessageSocket, messageSocket } from "../http/socket.js";
import type { Logger } from "../log/index.js";

/** One WebSocket connection of a route, with the path and query the client opened. */
export interface RouteSocket extends MessageSocket {
  /** The path the client opened, without its query. */
  readonly path: string;
  /** The query string's parameters. */
  readonly query: Readonly<Record<string, string>>;
}

/** A WebSocket route: runs for each connection; the connection closes when it returns or throws. */
export type SocketFn = (socket: RouteSocket) => void | Promise<void>;

export interface SocketRouteDefinition {
  path: string;
  fn: SocketFn;
}

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
