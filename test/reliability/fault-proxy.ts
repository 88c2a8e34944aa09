// A fault-injecting HTTP proxy between worker and platform: by configuration it answers a share of
// requests with 5xx, resets connections, delays answers, or drops the answer after the platform
// processed the request (so the worker retries something already done).
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { type Route, routeOf } from "../conformance/recording-platform.js";

export type { Route };

export type Fault = "500" | "502" | "503" | "reset" | "delay" | "drop-after";

export interface FaultPlan {
  /** Share of requests on each route that get a fault, 0..1. */
  rate: Partial<Record<Route, number>>;
  /** Faults drawn from, uniformly. */
  faults: readonly Fault[];
  delayMs?: number;
  /** Seed for the deterministic random source. */
  seed?: number;
}

export interface FaultRecord {
  route: Route;
  url: string;
  fault: Fault | "none";
  /** The request body as the worker sent it (job-done and job-stream only). */
  body?: string;
}

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class FaultProxy {
  readonly log: FaultRecord[] = [];
  private server!: Server;
  private readonly rand: () => number;
  base = "";

  constructor(
    private readonly target: string,
    public plan: FaultPlan,
  ) {
    this.rand = random(plan.seed ?? 1);
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  count(fault: Fault | "none", route?: Route): number {
    return this.log.filter((r) => r.fault === fault && (!route || r.route === route)).length;
  }

  private pick(route: Route): Fault | "none" {
    const rate = this.plan.rate[route] ?? 0;
    if (this.rand() >= rate || this.plan.faults.length === 0) return "none";
    return this.plan.faults[Math.floor(this.rand() * this.plan.faults.length)]!;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? "/";
    const route = routeOf(url);
    const fault = this.pick(route);
    const record: FaultRecord = { route, url, fault };
    this.log.push(record);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (route === "done" || route === "stream") record.body = body.toString("utf8");
      switch (fault) {
        case "500":
        case "502":
        case "503":
          res.writeHead(Number(fault), { "content-type": "text/plain" }).end("injected fault");
          return;
        case "reset":
          req.socket.destroy();
          return;
        case "delay":
          setTimeout(() => this.forward(req, body, res, false), this.plan.delayMs ?? 200);
          return;
        case "drop-after":
          this.forward(req, body, res, true);
          return;
        default:
          this.forward(req, body, res, false);
      }
    });
  }

  /** Sends the request on; with `drop`, the platform's answer is thrown away and the connection reset. */
  private forward(req: IncomingMessage, body: Buffer, res: ServerResponse, drop: boolean): void {
    const target = new URL(req.url ?? "/", this.target);
    const headers = { ...req.headers, host: target.host };
    const upstream = httpRequest(target, { method: req.method, headers }, (answer) => {
      const parts: Buffer[] = [];
      answer.on("data", (c: Buffer) => parts.push(c));
      answer.on("end", () => {
        if (drop) {
          req.socket.destroy();
          return;
        }
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(answer.headers))
          if (v !== undefined && k !== "transfer-encoding") out[k] = v;
        res.writeHead(answer.statusCode ?? 502, out).end(Buffer.concat(parts));
      });
    });
    upstream.on("error", () => req.socket.destroy());
    // A worker that gives up on a long-poll must not leave the platform holding it.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    upstream.end(body);
  }
}
