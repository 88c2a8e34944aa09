// The platform's worker API (job-take, job-done, stream, job-stop, ping) as runpod-python calls it.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { PlatformContext } from "./context.js";
import { addJsonParser, bodyCost, checkKey, clientGone, HttpError } from "./http.js";
import { RESULT_BODY_LIMIT, STREAM_BODY_LIMIT, workerCalls } from "./worker-calls.js";

export { RESULT_BODY_LIMIT, STREAM_BODY_LIMIT };
/** Jobs one batch take may ask for. */
export const MAX_BATCH_SIZE = 1_000;

type WorkerParams = { endpointId: string; workerId: string };
type PostParams = WorkerParams & { jobId: string };

/** The worker API under /v2/<endpoint_id>/, exactly as runpod-python 1.12 calls it (docs/protocol.md §3, §15). */
export async function workerApi(app: FastifyInstance, ctx: PlatformContext): Promise<void> {
  const { scheduler } = ctx;
  // Workers post raw JSON labelled form-urlencoded (docs/protocol.md §3.4, quirk §12.1); JSON is accepted too.
  addJsonParser(app, ["application/json", "application/x-www-form-urlencoded"]);
  app.addHook("onRequest", async (request) => checkKey(request, ctx.apiKey, true));
  const calls = (request: FastifyRequest) => {
    const { endpointId, workerId } = request.params as WorkerParams;
    return workerCalls(ctx, endpointId, workerId);
  };

  const take = async (request: FastifyRequest, reply: FastifyReply, batch: boolean) => {
    const { endpointId, workerId } = request.params as WorkerParams;
    const max = batch ? batchSize((request.query as { batch_size?: string }).batch_size) : 1;
    const gone = clientGone(reply);
    const { jobs, json } = await calls(request).take(max, gone);
    if (jobs.length === 0) return reply.code(204).send();
    // A job handed to a worker that is no longer listening would be lost: put it back.
    const endpoint = scheduler.endpoint(endpointId);
    if (gone.aborted) {
      if (endpoint) scheduler.undelivered(endpoint, workerId, jobs);
      return reply.code(204).send();
    }
    reply.raw.once("close", () => {
      if (!reply.raw.writableFinished && endpoint) scheduler.undelivered(endpoint, workerId, jobs);
    });
    return reply.type("application/json; charset=utf-8").send(batch ? `[${json.join(",")}]` : json[0]);
  };
  app.get("/job-take/:workerId", (request, reply) => take(request, reply, false));
  app.get("/job-take-batch/:workerId", (request, reply) => take(request, reply, true));

  app.post("/job-done/:workerId/:jobId", { bodyLimit: RESULT_BODY_LIMIT }, async (request, reply) => {
    const isStream = (request.query as { isStream?: string }).isStream === "true";
    const { jobId } = request.params as PostParams;
    const length = Number(request.headers["content-length"]);
    const bytes = Number.isFinite(length) ? length : undefined;
    return reply.send(calls(request).post("done", jobId, request.body, isStream, bytes, bodyCost(request)));
  });

  app.post("/job-stream/:workerId/:jobId", { bodyLimit: STREAM_BODY_LIMIT }, async (request, reply) => {
    const { jobId } = request.params as PostParams;
    return reply.send(
      calls(request).post("stream", jobId, request.body, false, undefined, bodyCost(request)),
    );
  });

  app.get("/job-stop/:workerId", async (request, reply) => {
    const jobsToStop = await calls(request).stops(clientGone(reply));
    if (jobsToStop.length === 0) return reply.code(204).send();
    return { jobsToStop };
  });

  app.get("/ping/:workerId", async (request, reply) => {
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
    calls(request).ping(unhealthy, jobIds);
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
