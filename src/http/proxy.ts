// What every relay in flash-worker shares (the worker's model-server proxy, the local platform's load balancer
// and Pod proxy): which headers cross a hop, and an upgrade (a WebSocket) tunnelled to a port on loopback.
import { type IncomingHttpHeaders, type IncomingMessage, STATUS_CODES } from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";

/** Headers that describe one connection, not the request (RFC 9110 §7.6.1), and Host, which names the hop. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
]);

/** The headers a relay passes on: all but the hop-by-hop ones and Host. */
export function forwardHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!HOP_BY_HOP.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

/** The lengths of HOP_BY_HOP's names: a raw header name of another length is passed on without lowercasing it. */
const HOP_LENGTHS = new Set([...HOP_BY_HOP].map((name) => name.length));

/** Whether a header name (any case) is hop-by-hop or Host: a relay does not pass it on. */
export function isHopHeader(name: string): boolean {
  return HOP_LENGTHS.has(name.length) && HOP_BY_HOP.has(name.toLowerCase());
}

/**
 * forwardHeaders on a message's raw headers (`[name, value, name, value, …]` as they came, case and repeats kept),
 * the form node:http's request() and writeHead() take as they are: no header object is built on either side.
 */
export function forwardRawHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (isHopHeader(name)) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/** An upgrade request's head as it is sent on to a port on loopback: its own headers, the Host that port's. */
export function upgradeHead(req: IncomingMessage, path: string, port: number): string {
  const lines = [`${req.method} ${path} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (name.toLowerCase() !== "host") lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
  }
  lines.push(`Host: 127.0.0.1:${port}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** An HTTP answer (a JSON error) on a socket that asked to upgrade, then the socket closed. */
export function refuseUpgrade(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * Tunnels an upgrade to `port` on loopback: the request head and what followed it go up, then bytes flow both
 * ways unread until either side closes, which closes the other.
 */
export function tunnelUpgrade(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  port: number,
  path = req.url ?? "/",
): Socket {
  const upstream = connect(port, "127.0.0.1");
  upstream.write(upgradeHead(req, path, port));
  if (head.length > 0) upstream.write(head);
  upstream.pipe(socket).pipe(upstream);
  upstream.once("error", () => socket.destroy());
  socket.once("error", () => upstream.destroy());
  socket.once("close", () => upstream.destroy());
  upstream.once("close", () => socket.destroy());
  return upstream;
}
