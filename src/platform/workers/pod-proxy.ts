// The Pods' HTTP proxy: `http://<pod_id>-<port>.localhost:<platform port>/<path>`, the platform's form of RunPod's
// `https://<pod_id>-<port>.proxy.runpod.net/<path>`, sent to the Pod's container port on loopback. Like RunPod's,
// it asks for no API key: an exposed http port is public. Upgrades (WebSockets) are tunnelled as they come.
import { request as httpRequest, type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";
import { connect } from "node:net";
import type { Duplex } from "node:stream";
import { forwardHeaders, upgradeHead } from "./lb-proxy.js";

/** `<pod_id>-<port>.localhost[:port]`. */
const POD_HOST = /^([a-z0-9]+)-(\d{1,5})\.localhost(?::\d+)?$/i;

/** A Pod as the proxy needs it. */
export interface ProxiedPod {
  status: string;
  httpPorts: number[];
}

export class PodProxy {
  constructor(private readonly find: (podId: string) => ProxiedPod | undefined) {}

  /** Answers a request whose Host names a Pod's port; false when it names none (the platform's routes take it). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const target = this.target(req);
    if (!target) return false;
    const { podId, port, refusal } = target;
    if (refusal) {
      answer(res, refusal.status, refusal.error);
      return true;
    }
    const upstream = httpRequest(
      { host: "127.0.0.1", port, method: req.method, path: req.url, headers: forwardHeaders(req.headers) },
      (reply) => {
        res.writeHead(reply.statusCode ?? 502, forwardHeaders(reply.headers));
        reply.pipe(res);
      },
    );
    upstream.once("error", (err) => {
      if (res.headersSent) res.destroy();
      else answer(res, 502, `Pod ${podId}: nothing answers on port ${port} (${err.message})`);
    });
    res.once("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
    return true;
  }

  /** Tunnels an upgrade (a WebSocket) whose Host names a Pod's port; false when it names none. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const target = this.target(req);
    if (!target) return false;
    const { refusal, port } = target;
    if (refusal) {
      const body = JSON.stringify({ error: refusal.error });
      socket.end(
        `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return true;
    }
    const upstream = connect(port, "127.0.0.1");
    upstream.write(upgradeHead(req, req.url ?? "/", port));
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket).pipe(upstream);
    upstream.once("error", () => socket.destroy());
    socket.once("error", () => upstream.destroy());
    socket.once("close", () => upstream.destroy());
    return true;
  }

  /** The Pod and port a request's Host names, and why it cannot be reached when it cannot. */
  private target(
    req: IncomingMessage,
  ): { podId: string; port: number; refusal?: { status: number; error: string } } | undefined {
    const m = POD_HOST.exec(req.headers.host ?? "");
    const podId = m?.[1]?.toLowerCase();
    const pod = podId ? this.find(podId) : undefined;
    if (!m || !podId || !pod) return undefined;
    const port = Number(m[2]);
    if (!pod.httpPorts.includes(port)) {
      const exposed = pod.httpPorts.map((p) => `${p}/http`).join(", ") || "none";
      const error = `Pod ${podId} exposes no port ${port}/http (its http ports: ${exposed})`;
      return { podId, port, refusal: { status: 404, error } };
    }
    if (pod.status !== "RUNNING") {
      const error = `Pod ${podId} is ${pod.status}, not RUNNING: nothing answers on port ${port} yet`;
      return { podId, port, refusal: { status: 502, error } };
    }
    return { podId, port };
  }
}

function answer(res: ServerResponse, status: number, error: string): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ error }));
}
