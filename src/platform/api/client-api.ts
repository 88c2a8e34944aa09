// The platform's client API (/run, /runsync, /status, /stream, /cancel, /health) with its body limits.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { EndpointState } from "../state/endpoint.js";
import { isTerminal, type JobRecord, jobView, MAX_TTL_MS, MIN_TTL_MS } from "../state/jobs.js";
import type { PlatformContext } from "./context.js";
import {
  addJsonParser,
  bodyCost,
  checkKey,
  clientGone,
  endpointFrom,
  HttpError,
  MB,
  roomForBody,
  waitParam,
} from "./http.js";

/** The platform's payload limits (docs/protocol.md §11): /run 10 MB, /runsync 20 MB. */
export const RUN_BODY_LIMIT = 10 * MB;
export const RUNSYNC_BODY_LIMIT = 20 * MB;
/** The shortest policy.executionTimeout the platform takes. */
export const MIN_EXECUTION_TIMEOUT_MS = 5_000;
/** One /stream answer carries at most 1 MB of chunks; the rest waits for the next poll (operation-reference, /stream). */
export const STREAM_ANSWER_LIMIT = 1 * MB;
/** /runsync and /status-sync wait this long without `?wait=` (the platform's 90 s). */
export const DEFAULT_SYNC_WAIT_MS = 90_000;

interface JobRequestBody {
  input?: unknown;
  webhook?: string;
  policy?: { executionTimeout?: number; ttl?: number; lowPriority?: boolean };
  s3Config?: Record<string, string>;
}

const jobRequestSchema = {
  type: "object",
  required: ["input"],
  properties: {
    input: {},
    webhook: { type: "string", minLength: 1 },
    webhookV2: { type: "string" },
    // runpod-sdk's bucket for the worker's uploads; handed to the worker with the job.
    s3Config: {
      type: "object",
      required: ["accessId", "accessSecret", "bucketName", "endpointUrl"],
      properties: {
        accessId: { type: "string" },
        accessSecret: { type: "string" },
        bucketName: { type: "string" },
        endpointUrl: { type: "string" },
        objectPath: { type: "string" },
      },
    },
    policy: {
      type: "object",
      properties: {
        // 5 s to 7 days (serverless/endpoints/send-requests, "Execution policies").
        executionTimeout: { type: "integer", minimum: MIN_EXECUTION_TIMEOUT_MS, maximum: MAX_TTL_MS },
        ttl: { type: "integer", minimum: MIN_TTL_MS, maximum: MAX_TTL_MS },
        lowPriority: { type: "boolean" },
      },
    },
  },
} as const;

type JobParams = { endpointId: string; jobId: string };

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** The client API under /v2/<endpoint_id>/: what runpod-sdk and curl call (docs/protocol.md §16). */
export async function clientApi(app: FastifyInstance, ctx: PlatformContext): Promise<void> {
  const { scheduler } = ctx;
  addJsonParser(app, "application/json");
  // Bearer as runpod-sdk sends it, or the raw key as the platform's own curl examples do.
  app.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, true));

  const jobFrom = (request: FastifyRequest): { endpoint: EndpointState; job: JobRecord } => {
    const endpoint = endpointFrom(scheduler, request);
    const { jobId } = request.params as JobParams;
    const job = scheduler.job(endpoint, jobId);
    if (!job) throw new HttpError(404, `Job ${jobId} not found`);
    return { endpoint, job };
  };

  const submit = async (request: FastifyRequest, sync: boolean): Promise<JobRecord> => {
    const endpoint = endpointFrom(scheduler, request);
    const body = request.body as JobRequestBody;
    if (body.input === undefined || body.input === null) {
      throw new HttpError(400, 'Missing "input": the body must be {"input": ...}');
    }
    // The handler's own schema, when it asked to be checked at submit: the worker's message, before the queue.
    const refused = await endpoint.config.checkInput?.(body.input);
    if (refused !== undefined) throw new HttpError(400, refused);
    if (body.webhook !== undefined && !isHttpUrl(body.webhook)) {
      throw new HttpError(400, `Invalid "webhook": ${JSON.stringify(body.webhook)} is not an http(s) URL`);
    }
    return scheduler.submit(endpoint, {
      input: body.input,
      webhook: body.webhook,
      s3Config: body.s3Config,
      executionTimeoutMs: body.policy?.executionTimeout,
      ttlMs: body.policy?.ttl,
      lowPriority: body.policy?.lowPriority,
      sync,
      bytes: bodyCost(request),
    });
  };
  // A job's body is refused before it is read when the memory budget has no room for it (429).
  const preParsing = roomForBody(scheduler);

  app.post(
    "/run",
    { bodyLimit: RUN_BODY_LIMIT, schema: { body: jobRequestSchema }, preParsing },
    async (request) => {
      const job = await submit(request, false);
      return { id: job.id, status: "IN_QUEUE" };
    },
  );

  app.post(
    "/runsync",
    { bodyLimit: RUNSYNC_BODY_LIMIT, schema: { body: jobRequestSchema }, preParsing },
    async (request, reply) => {
      const { wait } = request.query as { wait?: string };
      const waitMs = waitParam(wait, DEFAULT_SYNC_WAIT_MS);
      const job = await submit(request, true);
      await scheduler.waitForTerminal(job, waitMs, clientGone(reply));
      return jobView(job);
    },
  );

  const status = async (request: FastifyRequest) => jobView(jobFrom(request).job);
  app.get("/status/:jobId", status);
  app.post("/status/:jobId", status);

  app.get("/status-sync/:jobId", async (request, reply) => {
    const { wait } = request.query as { wait?: string };
    const waitMs = waitParam(wait, DEFAULT_SYNC_WAIT_MS);
    const { job } = jobFrom(request);
    await scheduler.waitForTerminal(job, waitMs, clientGone(reply));
    return jobView(job);
  });

  const stream = async (request: FastifyRequest, reply: FastifyReply) => {
    const { job } = jobFrom(request);
    if (String(request.headers.accept ?? "").includes("text/event-stream"))
      return streamEvents(ctx, job, reply);
    const gone = clientGone(reply);
    const deadline = Date.now() + ctx.longPollMs;
    let chunks = readStream(job, STREAM_ANSWER_LIMIT);
    // Hold the poll until there is something to say, so a client looping on /stream does not spin.
    while (chunks.length === 0 && !isTerminal(job.status) && !gone.aborted && !scheduler.closed) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      await scheduler.waitForChange(job, left, gone);
      chunks = readStream(job, STREAM_ANSWER_LIMIT);
    }
    // Chunks left for the next page: a client stops polling at a final status, so it is shown once they are out.
    const more = job.streamRead < job.stream.length;
    return {
      id: job.id,
      status: more && isTerminal(job.status) ? "IN_PROGRESS" : job.status,
      stream: chunks,
    };
  };
  app.get("/stream/:jobId", stream);
  app.post("/stream/:jobId", stream);

  app.post("/cancel/:jobId", async (request) => {
    const { endpoint, job } = jobFrom(request);
    return jobView(scheduler.cancel(endpoint, job));
  });

  app.post("/retry/:jobId", async (request) => {
    const { endpoint, job } = jobFrom(request);
    if (!scheduler.retry(endpoint, job)) {
      throw new HttpError(
        400,
        `Job ${job.id} is ${job.status}; only FAILED or TIMED_OUT jobs can be retried`,
      );
    }
    return { id: job.id, status: job.status };
  });

  endpointInfoRoutes(app, ctx);

  app.post("/purge-queue", async (request) => {
    const endpoint = endpointFrom(scheduler, request);
    return { removed: scheduler.purge(endpoint), status: "completed" };
  });
}

/** What the client API says of an endpoint rather than a job: its OpenAPI document and its health. */
function endpointInfoRoutes(app: FastifyInstance, ctx: PlatformContext): void {
  const { scheduler } = ctx;
  // The document flash dev made from the app (src/app/openapi.ts); an endpoint made otherwise has none to serve.
  app.get("/openapi.json", async (request, reply) => {
    const endpoint = endpointFrom(scheduler, request);
    const document = endpoint.config.openapi;
    if (document === undefined) {
      throw new HttpError(
        404,
        `Endpoint ${endpoint.config.id} has no OpenAPI document: flash dev makes one from the app it loads`,
      );
    }
    return reply.type("application/json; charset=utf-8").send(document);
  });

  app.get("/health", async (request) => {
    const endpoint = endpointFrom(scheduler, request);
    let idle = 0;
    let running = 0;
    let unhealthy = ctx.deadWorkers(endpoint);
    for (const worker of endpoint.workers.values()) {
      if (worker.unhealthy !== undefined) unhealthy++;
      // Heard from but not yet asking for jobs (its model server loading): the pool counts it initializing.
      else if (worker.readyAt === undefined) continue;
      else if (worker.jobs.size > 0) running++;
      else idle++;
    }
    return {
      jobs: scheduler.health(endpoint),
      workers: {
        idle,
        initializing: ctx.initializingWorkers(endpoint),
        ready: idle,
        running,
        throttled: 0,
        unhealthy,
      },
    };
  });
}

/** Server-Sent Events: one `data:` event per chunk, then an `event: status` with the job, then the end. */
async function streamEvents(ctx: PlatformContext, job: JobRecord, reply: FastifyReply): Promise<void> {
  const { scheduler } = ctx;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  res.flushHeaders();
  const gone = clientGone(reply);
  while (!gone.aborted) {
    for (const chunk of readStream(job)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    if (isTerminal(job.status) || scheduler.closed) break;
    await scheduler.waitForChange(job, ctx.longPollMs, gone);
    if (!gone.aborted) res.write(": waiting\n\n");
  }
  if (!gone.aborted) res.end(`event: status\ndata: ${JSON.stringify(jobView(job))}\n\n`);
}

/** Chunks not yet handed out; a job without a generator gives its final output as one chunk. */
function readStream(job: JobRecord, limit = Number.POSITIVE_INFINITY): { output: unknown }[] {
  const chunks: { output: unknown }[] = [];
  let bytes = 0;
  while (job.streamRead < job.stream.length) {
    const chunk = job.stream[job.streamRead]!;
    bytes += Buffer.byteLength(JSON.stringify(chunk));
    // Always at least one chunk, so a poll never comes back empty while chunks wait.
    if (chunks.length > 0 && bytes > limit) return chunks;
    chunks.push(chunk);
    job.streamRead++;
  }
  if (isTerminal(job.status) && !job.streamed && job.hasOutput && !job.outputStreamed) {
    job.outputStreamed = true;
    chunks.push({ output: job.output });
  }
  return chunks;
}
