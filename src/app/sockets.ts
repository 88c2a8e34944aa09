// The WebSocket routes an Endpoint declares (`api.websocket(path, fn)`); runtime/lb/sockets.ts serves them.
import type { MessageSocket } from "../http/socket.js";

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
