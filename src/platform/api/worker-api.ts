// The platform's worker API (job-take, job-done, stream, job-stop, ping) as runpod-python calls it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { EndpointState } from "../state/endpoint.js";
import type { JobRecord } from "../state/jobs.js";
import type { PostOutcome, ResultBody } from "../state/scheduler.js";
import type { PlatformContext } from "./context.js";
import { addJsonParser, checkKey, clientGone, endpointFrom, HttpError, MB } from "./http.js";

/** A result may be as large as a /runsync answer; one stream chunk at most 1 MB (docs/protocol.md §11). */
export const RESULT_BODY_LIMIT = 20 * MB;
export const STREAM_BODY_LIMIT = 1 * MB;
/** Jobs one batch take may ask for. */
export const MAX_BATCH_SIZE = 1_000;

type WorkerParams = { endpointId: string; workerId: string };
type PostParams = WorkerParams & { jobId: string };

/** The job object a worker receives: what the platform sends on job-take, the request's fields kept (docs/protocol.md §4.1). */
const takenJob = (job: JobRecord) => ({
  id: job.id,
  input: job.input,
  ...(job.webhook === undefined ? {} : { webhook: job.webhook }),
  ...(job.s3Config === undefined ? {} : { s3Config: job.s3Config }),
});

/** The worker API under /v2/<endpoint_id>/, exactly as runpod-python 1.12 calls it (docs/protocol.md §3, §15). */
export async function workerApi(app: FastifyInstance, ctx: PlatformContext): Promise<void> {
  const { scheduler } = ctx;
  // Workers post raw JSON labelled form-urlencoded (docs/protocol.md §3.4, quirk §12.1); JSON is accepted too.
  addJsonParser(app, ["application/json", "application/x-www-form-urlencoded"]);
  app.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, true));

  const take = async (request: FastifyRequest, reply: FastifyReply, batch: boolean) => {
    const endpoint = endpointFrom(scheduler, request);
    const { workerId } = request.params as WorkerParams;
    const max = batch ? batchSize((request.query as { batch_size?: string }).batch_size) : 1;
    const gone = clientGone(reply);
    const release = scheduler.seen(endpoint, workerId, true);
    let jobs: JobRecord[];
    try {
      jobs = await scheduler.take(endpoint, workerId, max, ctx.longPollMs, gone);
    } finally {
      release();
    }
    if (jobs.length === 0) return reply.code(204).send();
    // A job handed to a worker that is no longer listening would be lost: put it back.
    if (gone.aborted) {
      scheduler.undelivered(endpoint, workerId, jobs);
      return reply.code(204).send();
    }
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished) scheduler.undelivered(endpoint, workerId, jobs);
    });
    return batch ? jobs.map(takenJob) : takenJob(jobs[0]!);
  };
  app.get("/job-take/:workerId", (request, reply) => take(request, reply, false));
  app.get("/job-take-batch/:workerId", (request, reply) => take(request, reply, true));

  const post = (
    request: FastifyRequest,
    reply: FastifyReply,
    apply: (endpoint: EndpointState, workerId: string, job: JobRecord, body: ResultBody) => PostOutcome,
  ) => {
    const endpoint = endpointFrom(scheduler, request);
    const { workerId, jobId } = request.params as PostParams;
    scheduler.seen(endpoint, workerId);
    const body = request.body;
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      throw new HttpError(400, 'The body must be a JSON object such as {"output": ...}');
    }
    const job = scheduler.jobs.get(jobId);
    if (!job || job.endpointId !== endpoint.id) throw new HttpError(404, `Job ${jobId} not found`);
    const outcome = apply(endpoint, workerId, job, body as ResultBody);
    if (outcome === "not-held") {
      throw new HttpError(409, `Worker ${workerId} does not hold job ${jobId} (status ${job.status})`);
    }
    return reply.send({
      id: job.id,
      status: job.status,
      ...(outcome === "ignored" ? { ignored: true } : {}),
    });
  };

  app.post("/job-done/:workerId/:jobId", { bodyLimit: RESULT_BODY_LIMIT }, async (request, reply) => {
    const isStream = (request.query as { isStream?: string }).isStream === "true";
    return post(request, reply, (endpoint, workerId, job, body) =>
      scheduler.done(endpoint, workerId, job, body, isStream),
    );
  });

  app.post("/job-stream/:workerId/:jobId", { bodyLimit: STREAM_BODY_LIMIT }, async (request, reply) =>
    post(request, reply, (endpoint, workerId, job, body) =>
      scheduler.streamChunk(endpoint, workerId, job, body),
    ),
  );

  app.get("/job-stop/:workerId", async (request, reply) => {
    const endpoint = endpointFrom(scheduler, request);
    const { workerId } = request.params as WorkerParams;
    const release = scheduler.seen(endpoint, workerId, true);
    let jobsToStop: string[];
    try {
      jobsToStop = await scheduler.stopPoll(endpoint, workerId, ctx.longPollMs, clientGone(reply));
    } finally {
      release();
    }
    if (jobsToStop.length === 0) return reply.code(204).send();
    return { jobsToStop };
  });

  app.get("/ping/:workerId", async (request, reply) => {
    const endpoint = endpointFrom(scheduler, request);
    const { workerId } = request.params as WorkerParams;
    const query = request.query as {
      status?: string;
      check?: string;
      reason?: string;
      job_id?: string;
      runpod_version?: string;
    };
    const unhealthy =
      query.status === "unhealthy"
        ? `${query.check ?? "fitness check"}: ${query.reason ?? "no reason"}`
        : undefined;
    // A heartbeat (it carries runpod_version) lists every job the worker holds; none listed means none held.
    const jobIds =
      unhealthy === undefined && query.runpod_version !== undefined
        ? (query.job_id ?? "").split(",").filter((id) => id.length > 0)
        : undefined;
    scheduler.ping(endpoint, workerId, unhealthy, jobIds);
    return reply.code(200).send({});
  });
}

function batchSize(raw: string | undefined): number {
  const value = raw === undefined ? 1 : Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_BATCH_SIZE) {
    throw new HttpError(
      400,
      `Invalid batch_size "${raw}": expected a whole number from 1 to ${MAX_BATCH_SIZE}`,
    );
  }
  return value;
}
