// The Pods' HTTP proxy: `http://127.0.0.1:<platform port>/pods/<pod_id>/<port>/<path>`, the platform's form of
// RunPod's `https://<pod_id>-<port>.proxy.runpod.net/<path>`, sent to the Pod's container port on loopback as
// `/<path>`; `http://<pod_id>-<port>.localhost:<platform port>/<path>` too, for browsers and curl (Node's resolver
// does not know `*.localhost`, so Node clients need the path form). Like RunPod's, it asks for no API key: an
// exposed http port is public. Upgrades (WebSockets) are tunnelled as they come.
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { forwardHeaders, refuseUpgrade, tunnelUpgrade } from "../../http/proxy.js";

/** `<pod_id>-<port>.localhost[:port]`. */
const POD_HOST = /^([a-z0-9]+)-(\d{1,5})\.localhost(?::\d+)?$/i;
/** `/pods/<pod_id>/<port>[/<path>][?query]`. */
const POD_PATH = /^\/pods\/([a-z0-9]+)\/(\d{1,5})(?=[/?]|$)(.*)$/i;

/** The path prefix of a Pod's port on the platform: `/pods/<pod_id>/<port>`. */
export const podPathPrefix = (podId: string, port: number): string => `/pods/${podId}/${port}`;

/** A Pod as the proxy needs it. */
export interface ProxiedPod {
  status: string;
  httpPorts: number[];
}

interface Target {
  podId: string;
  port: number;
  /** The path (and query) the container is sent. */
  path: string;
  refusal?: { status: number; error: string };
}

export class PodProxy {
  constructor(private readonly find: (podId: string) => ProxiedPod | undefined) {}

  /** Answers a request whose Host names a Pod's port; false when it names none (the platform's routes take it). */
  handle(req: IncomingMessage, res: ServerResponse): boolean {
    const target = this.target(req);
    if (!target) return false;
    const { podId, port, path, refusal } = target;
    if (refusal) {
      answer(res, refusal.status, refusal.error);
      return true;
    }
    const upstream = httpRequest(
      { host: "127.0.0.1", port, method: req.method, path, headers: forwardHeaders(req.headers) },
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
    const { refusal, port, path } = target;
    if (refusal) refuseUpgrade(socket, refusal.status, refusal.error);
    // The container sees its own path, without the /pods/<id>/<port> prefix.
    else tunnelUpgrade(req, socket, head, port, path);
    return true;
  }

  /** The Pod, port and container path a request names (by Host or by path), and why it cannot be reached when it cannot. */
  private target(req: IncomingMessage): Target | undefined {
    const url = req.url ?? "/";
    const byHost = POD_HOST.exec(req.headers.host ?? "");
    const byPath = byHost ? undefined : POD_PATH.exec(url);
    const m = byHost ?? byPath;
    const podId = m?.[1]?.toLowerCase();
    if (!m || !podId) return undefined;
    const port = Number(m[2]);
    const rest = byPath?.[3] ?? "";
    const path = byPath ? (rest.startsWith("/") ? rest : `/${rest}`) : url;
    const pod = this.find(podId);
    if (!pod) {
      // A host naming no Pod goes to the platform's own routes; /pods/ is the proxy's alone.
      if (byHost) return undefined;
      return { podId, port, path, refusal: { status: 404, error: `No Pod ${podId} on this platform` } };
    }
    if (!pod.httpPorts.includes(port)) {
      const exposed = pod.httpPorts.map((p) => `${p}/http`).join(", ") || "none";
      const error = `Pod ${podId} exposes no port ${port}/http (its http ports: ${exposed})`;
      return { podId, port, path, refusal: { status: 404, error } };
    }
    if (pod.status !== "RUNNING") {
      const error = `Pod ${podId} is ${pod.status}, not RUNNING: nothing answers on port ${port} yet`;
      return { podId, port, path, refusal: { status: 502, error } };
    }
    return { podId, port, path };
  }
}

function answer(res: ServerResponse, status: number, error: string): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ error }));
}
