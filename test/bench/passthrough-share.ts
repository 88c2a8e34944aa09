// The queue passthrough's worker share of a first token (issue 46, item 5): from the model server writing its first
// SSE event to the worker's stream post of it arriving at the platform. A stand-in platform (node:http, in this
// process) hands a queue worker (`flash start`, the passthrough handler) one streamed chat job at a time; the
// worker's model server (fixtures/passthrough-upstream.mjs) puts the monotonic clock in its first event, and the
// platform reads the clock again as the stream post carrying that event arrives. Nothing is timed inside the worker:
// the figure holds the two loopback hops (server → worker, worker → platform), so a bare node:http worker
// (fixtures/bare-passthrough.mjs) is timed the same way in the same turns, and the difference is the worker's own.
import type { ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { percentile, spawnNode, startUntil } from "./bench-platform.js";
import { fixture } from "./wrk.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");
const CHAT = {
  openai_route: "/v1/chat/completions",
  openai_input: { model: "m", messages: [{ role: "user", content: "hi" }], stream: true },
};

/** A request's body as text. */
function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (part: string) => {
      text += part;
    });
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });
}

/** The stand-in platform: job-take hands the next job (or 204 after 200 ms), stream posts are timed, done ends. */
class StandIn {
  private server = createServer((req, res) => void this.handle(req, res));
  private queued: string[] = [];
  /** Job-takes being held (the worker keeps one open per free slot), each with whether it is a batch take. */
  private waiting: { res: ServerResponse; batch: boolean }[] = [];
  private onDone: (() => void) | undefined;
  /** ns from the server's first event written to its stream post here, one per job. */
  shares: number[] = [];
  base = "";

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  env(): Record<string, string> {
    return {
      RUNPOD_WEBHOOK_GET_JOB: `${this.base}/v2/EP/job-take/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_OUTPUT: `${this.base}/v2/EP/job-done/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_WEBHOOK_POST_STREAM: `${this.base}/v2/EP/job-stream/$RUNPOD_POD_ID/$ID?gpu=X`,
      RUNPOD_WEBHOOK_PING: `${this.base}/v2/EP/ping/$RUNPOD_POD_ID`,
      RUNPOD_POD_ID: "bench",
      RUNPOD_AI_API_KEY: "K",
      RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
      RUNPOD_NETWORK_CHECK_PORT: new URL(this.base).port,
    };
  }

  /** Runs one job through the worker; resolves once its result is posted. */
  run(id: string): Promise<void> {
    const done = new Promise<void>((resolve) => {
      this.onDone = resolve;
    });
    const take = this.waiting.shift();
    if (take) this.hand(take.res, take.batch, id);
    else this.queued.push(id);
    return done;
  }

  private hand(res: ServerResponse, batch: boolean, id: string): void {
    const job = { id, input: CHAT };
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(batch ? [job] : job));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? "";
    if (url.includes("/job-stream/")) {
      // Read before the body: what the worker sent is here once its head is.
      const arrived = process.hrtime.bigint();
      const text = await body(req);
      const t0 = /\\"t0\\":\\"(\d+)\\"/.exec(text)?.[1];
      if (t0) this.shares.push(Number(arrived - BigInt(t0)));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
      return;
    }
    if (url.includes("/job-take")) {
      const batch = url.includes("/job-take-batch/");
      const next = this.queued.shift();
      if (next) return this.hand(res, batch, next);
      const take = { res, batch };
      this.waiting.push(take);
      // The platform's long poll, short: a take unanswered by then gets 204 and the worker asks again.
      setTimeout(() => {
        const at = this.waiting.indexOf(take);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        res.writeHead(204).end();
      }, 200);
      return;
    }
    await body(req);
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
    if (url.includes("/job-done/")) this.onDone?.();
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

export interface Share {
  /** p50 in ms of the flash worker's share, and of the bare node:http worker's in the same turns. */
  flash: number;
  bare: number;
  /** Each round's p50s, flash then bare. */
  rounds: [number, number][];
  jobs: number;
}

const p50 = (ns: number[]) => percentile(ns, 50) / 1e6;

/**
 * The worker's share over `rounds` rounds of `jobs` streamed chats each, one job at a time, the flash worker's and
 * the bare worker's (fixtures/bare-passthrough.mjs) in turns, each with its own stand-in platform and its own
 * model server; `warm` unrecorded jobs each first.
 */
export async function workerShare(
  port: number,
  rounds: number,
  jobs: number,
  root = ROOT,
  warm = 20,
): Promise<Share> {
  const platforms = { flash: await new StandIn().start(), bare: await new StandIn().start() };
  const children: ChildProcess[] = [];
  try {
    const line = `${process.execPath} ${fixture("passthrough-upstream.mjs")} {port}`;
    const worker = await startUntil(
      process.execPath,
      [`${root}/dist/cli/main.js`, "start", `${root}/test/bench/fixtures/model-server-queue.mjs`],
      {
        ...platforms.flash.env(),
        LOG_LEVEL: "INFO",
        RUNPOD_SKIP_GPU_CHECK: "true",
        UPSTREAM: "command",
        UPSTREAM_COMMAND: line.replaceAll("{port}", String(port)),
        UPSTREAM_PORT: String(port),
      },
      (seen) => (/Model server 'upstream' is ready/.test(seen) ? true : undefined),
    );
    children.push(worker.child);
    const upstream = await startUntil(
      process.execPath,
      [fixture("passthrough-upstream.mjs"), String(port + 1)],
      {},
      (seen) => (/listening/.test(seen) ? true : undefined),
    );
    children.push(upstream.child);
    children.push(
      spawnNode([fixture("bare-passthrough.mjs")], {
        ...platforms.bare.env(),
        UPSTREAM_URL: `http://127.0.0.1:${port + 1}`,
      }),
    );
    const all = { flash: [] as number[], bare: [] as number[] };
    const perRound: [number, number][] = [];
    let next = 0;
    for (const key of ["flash", "bare"] as const) {
      for (let i = 0; i < warm; i++) await platforms[key].run(`warm-${next++}`);
    }
    for (let round = 0; round < rounds; round++) {
      const got = { flash: [] as number[], bare: [] as number[] };
      for (const key of round % 2 ? (["bare", "flash"] as const) : (["flash", "bare"] as const)) {
        platforms[key].shares = [];
        for (let i = 0; i < jobs; i++) await platforms[key].run(`job-${next++}`);
        got[key] = platforms[key].shares;
        all[key].push(...got[key]);
      }
      perRound.push([p50(got.flash), p50(got.bare)]);
    }
    return { flash: p50(all.flash), bare: p50(all.bare), rounds: perRound, jobs: all.flash.length };
  } finally {
    for (const child of children) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
    await platforms.flash.close();
    await platforms.bare.close();
  }
}
