// A platform stand-in for conformance tests: a real HTTP server on 127.0.0.1 that records every request
// the worker makes and answers as the test scripts it (docs/protocol.md §3, §15).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Recorded {
  method: string;
  /** Path and query exactly as sent. */
  url: string;
  route: Route;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}

export interface Answer {
  status: number;
  body?: string;
  contentType?: string;
}

type Reply = Answer | "reset" | undefined;
type Responder = (req: Recorded) => Reply | Promise<Reply>;

/** Which worker-protocol route a request path is (docs/protocol.md §3). */
export type Route = "take" | "take-batch" | "stop" | "done" | "stream" | "ping" | "other";

export const routeOf = (path: string): Route => {
  if (path.includes("/job-take-batch/")) return "take-batch";
  if (path.includes("/job-take/")) return "take";
  if (path.includes("/job-stop/")) return "stop";
  if (path.includes("/job-done/")) return "done";
  if (path.includes("/job-stream/")) return "stream";
  if (path.includes("/ping/")) return "ping";
  return "other";
};

export class RecordingPlatform {
  readonly requests: Recorded[] = [];
  /** Jobs handed out by job-take, in order. */
  readonly queue: unknown[] = [];
  /** Job ids handed out by the next job-stop poll. */
  readonly stops: string[] = [];
  /** How long an empty job-take or job-stop is held before 204 (the long-poll). */
  holdMs = 300;
  /** Scripted answers, tried before the default behaviour; return undefined to fall through. */
  responders: Responder[] = [];
  private server!: Server;
  private waiters: Array<() => void> = [];
  base = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** The env a worker needs to talk to this server, as the platform would set it. */
  env(workerId = "w1", key = "K"): Record<string, string> {
    return {
      RUNPOD_WEBHOOK_GET_JOB: `${this.base}/v2/EP/job-take/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${this.base}/v2/EP/job-done/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_STREAM: `${this.base}/v2/EP/job-stream/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_WEBHOOK_PING: `${this.base}/v2/EP/ping/$RUNPOD_POD_ID?gpu=X`,
      RUNPOD_POD_ID: workerId,
      RUNPOD_AI_API_KEY: key,
      // The fitness network check dials this server, never the internet.
      RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
      RUNPOD_NETWORK_CHECK_PORT: new URL(this.base).port,
    };
  }

  push(...jobs: unknown[]): void {
    this.queue.push(...jobs);
    this.notify();
  }

  stop(...ids: string[]): void {
    this.stops.push(...ids);
    this.notify();
  }

  of(route: Recorded["route"]): Recorded[] {
    return this.requests.filter((r) => r.route === route);
  }

  /** Resolves once the recorded requests satisfy the predicate. */
  async waitFor(predicate: (requests: Recorded[]) => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.requests)) {
      if (Date.now() > deadline) {
        throw new Error(
          `timed out; recorded: ${this.requests.map((r) => `${r.method} ${r.url}`).join("\n")}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = req.url ?? "";
      const recorded: Recorded = {
        method: req.method ?? "",
        url,
        route: routeOf(url),
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      this.requests.push(recorded);
      this.notify();
      void this.answer(recorded, req, res);
    });
  }

  private send(res: ServerResponse, answer: Answer): void {
    if (res.destroyed) return;
    const headers: Record<string, string> = {};
    if (answer.body !== undefined) headers["content-type"] = answer.contentType ?? "application/json";
    res.writeHead(answer.status, headers);
    res.end(answer.body);
  }

  private async answer(recorded: Recorded, req: IncomingMessage, res: ServerResponse): Promise<void> {
    for (const responder of this.responders) {
      const answer = await responder(recorded);
      if (answer === "reset") {
        req.socket.destroy();
        return;
      }
      if (answer) return this.send(res, answer);
    }
    switch (recorded.route) {
      case "take":
      case "take-batch": {
        const size = Number(new URL(recorded.url, this.base).searchParams.get("batch_size") ?? "1");
        const deadline = Date.now() + this.holdMs;
        while (this.queue.length === 0 && Date.now() < deadline && !res.destroyed) {
          await new Promise((r) => setTimeout(r, 10));
        }
        if (this.queue.length === 0 || res.destroyed) return this.send(res, { status: 204 });
        if (recorded.route === "take")
          return this.send(res, { status: 200, body: JSON.stringify(this.queue.shift()) });
        return this.send(res, { status: 200, body: JSON.stringify(this.queue.splice(0, size)) });
      }
      case "stop": {
        const deadline = Date.now() + this.holdMs;
        while (this.stops.length === 0 && Date.now() < deadline && !res.destroyed) {
          await new Promise((r) => setTimeout(r, 10));
        }
        if (this.stops.length === 0) return this.send(res, { status: 204 });
        return this.send(res, { status: 200, body: JSON.stringify({ jobsToStop: this.stops.splice(0) }) });
      }
      default:
        return this.send(res, { status: 200, body: "{}" });
    }
  }
}
