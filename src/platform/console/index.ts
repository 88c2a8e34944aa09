// The local console: a web page at `/` over the platform's own state (endpoints, workers, jobs, metrics,
// worker logs) and a playground that calls the client API. Every API call carries the platform's key:
// Bearer on JSON routes, a short-lived token from POST /console/api/token on the event streams (auth.ts).

import type { FastifyInstance, FastifyReply } from "fastify";
import { gpuFacts, gpuLabel } from "../../gpu/facts.js";
import { PROMETHEUS_CONTENT_TYPE } from "../../http/prometheus.js";
import type { PlatformContext } from "../api/context.js";
import { addJsonParser, checkKey, HttpError } from "../api/http.js";
import type { LbEndpoints } from "../workers/lb-proxy.js";
import type { WorkerPool } from "../workers/pool.js";
import { PageAssets } from "./assets.js";
import { checkEventToken, eventToken } from "./auth.js";
import { ConsoleHub, JOB_WINDOW, LOG_BACKLOG } from "./hub.js";
import { type LogBook, workerFilter } from "./logs.js";
import type { ConsoleJobDetail, ConsoleSettings } from "./wire.js";

export { LogBook, teeLogger } from "./logs.js";

export interface ConsoleOptions {
  ctx: PlatformContext;
  logs: LogBook;
  pool(endpointId: string): WorkerPool | undefined;
  lb?: LbEndpoints;
  /** Where the built page is (default: found beside the module or in dist). */
  pageDirectory?: string;
  /** Delta interval of the event streams (default 250 ms). */
  flushMs?: number;
}

/** The page may talk to its own origin only; nothing it shows is ever run as markup. */
/** A lightning bolt on the console's accent colour. */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#5b4bdb"/>' +
  '<path d="M9 1 3 9h4l-1 6 6-8H8z" fill="#fff"/></svg>';

const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

/** A job's detail as JSON; a value JSON.stringify cannot write (nested past its stack) is named instead of a 500. */
function detailJson(job: ConsoleJobDetail): string {
  try {
    return JSON.stringify(job);
  } catch {
    const shown: Record<string, unknown> = { ...job };
    for (const key of ["input", "outputValue", "errorValue", "stream"] as const) {
      try {
        JSON.stringify(job[key]);
      } catch (err) {
        shown[key] = `(not shown: ${err instanceof Error ? err.message : String(err)})`;
      }
    }
    return JSON.stringify(shown);
  }
}

const NOT_BUILT =
  "The console page is not built: run `npm run build` (it compiles src/platform/console/page into dist).";

const settingsSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    retention: {
      type: "object",
      additionalProperties: false,
      properties: {
        runMs: { type: "integer", minimum: 1_000, maximum: 7 * 24 * 3_600_000 },
        syncMs: { type: "integer", minimum: 1_000, maximum: 7 * 24 * 3_600_000 },
      },
    },
  },
} as const;

const limitParam = (raw: unknown, fallback: number, max: number): number => {
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new HttpError(400, `Invalid limit "${String(raw)}": expected an integer from 0 to ${max}`);
  }
  return value;
};

export async function consolePlugin(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const { ctx } = options;
  const gpu = gpuLabel(await gpuFacts());
  const hub = new ConsoleHub({
    gpu,
    scheduler: ctx.scheduler,
    pool: options.pool,
    logs: options.logs,
    lb: options.lb,
    flushMs: options.flushMs,
  });
  app.addHook("onClose", async () => hub.close());
  const assets = new PageAssets(options.pageDirectory);

  const sendAsset = (reply: FastifyReply, name: string) => {
    const asset = assets.get(name);
    if (!asset) {
      if (name === "index.html") return reply.code(503).type("text/plain").send(NOT_BUILT);
      throw new HttpError(404, `No console file ${name}`);
    }
    return reply.headers(PAGE_HEADERS).type(asset.type).send(asset.body);
  };

  // The page itself holds no data: without the key it can only show its login form.
  app.get("/", (_request, reply) => sendAsset(reply, "index.html"));
  // Browsers ask for it on their own: a small icon rather than a 404 in every log and devtools.
  app.get("/favicon.ico", (_request, reply) =>
    reply.headers(PAGE_HEADERS).header("cache-control", "max-age=86400").type("image/svg+xml").send(FAVICON),
  );
  app.get("/console/assets/:name", (request, reply) =>
    sendAsset(reply, (request.params as { name: string }).name),
  );

  // Prometheus scrapes with the platform's key as a Bearer token (README "Observe it").
  app.get("/metrics", async (request, reply) => {
    checkKey(request, ctx.apiKey, false);
    return reply.type(PROMETHEUS_CONTENT_TYPE).send(hub.prometheus());
  });

  // EventSource cannot send headers: the streams take ?token= (auth.ts) instead of the Bearer key.
  app.get("/console/api/events", async (request, reply) => {
    checkEventToken(request, ctx.apiKey);
    const { jobs } = request.query as { jobs?: string };
    hub.openEvents(reply, limitParam(jobs, 1_000, JOB_WINDOW));
  });
  app.get("/console/api/logs/events", async (request, reply) => {
    checkEventToken(request, ctx.apiKey);
    const { worker } = request.query as { worker?: string };
    hub.openLogs(reply, worker || undefined);
  });

  await app.register(
    async (api) => {
      addJsonParser(api, "application/json");
      api.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, false));

      api.post("/token", async () => eventToken(ctx.apiKey));

      api.get("/snapshot", async (request) => {
        const { jobs } = request.query as { jobs?: string };
        return hub.snapshot(limitParam(jobs, 1_000, JOB_WINDOW));
      });

      api.get("/endpoints", async () => hub.endpoints());

      api.get("/jobs/:jobId", async (request, reply) => {
        const { jobId } = request.params as { jobId: string };
        const job = hub.job(jobId);
        if (!job) throw new HttpError(404, `Job ${jobId} not found`);
        return reply.type("application/json; charset=utf-8").send(detailJson(job));
      });

      api.get("/logs", async (request) => {
        const { worker, limit } = request.query as { worker?: string; limit?: string };
        const max = options.logs.size;
        return {
          lines: options.logs.recent(workerFilter(worker || undefined), limitParam(limit, LOG_BACKLOG, max)),
        };
      });

      api.get("/settings", async () => hub.settings());

      api.put("/settings", { schema: { body: settingsSchema } }, async (request) => {
        const body = (request.body ?? {}) as Partial<ConsoleSettings>;
        if (body.retention) {
          const retention = { ...ctx.scheduler.jobs.retentionMs, ...body.retention };
          ctx.scheduler.jobs.retentionMs = retention;
          ctx.log.info(
            `Console: retention of finished jobs set to /run ${retention.runMs} ms, /runsync ${retention.syncMs} ms`,
          );
        }
        return hub.settings();
      });
    },
    { prefix: "/console/api" },
  );
}
