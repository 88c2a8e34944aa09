// The worker API at the wire level, in the raw requests runpod-python 1.12 makes (docs/protocol.md §3, §15).
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENDPOINT, eventually, type JobJson, startTestPlatform, type TestPlatform } from "./helpers.js";

let t: TestPlatform;
beforeEach(async () => {
  t = await startTestPlatform();
});
afterEach(async () => {
  await t.platform.close();
});

const run = async (input: unknown, extra: Record<string, unknown> = {}): Promise<string> =>
  ((await (await t.client("/run", { body: { input, ...extra } })).json()) as JobJson).id;
const status = async (id: string): Promise<JobJson> =>
  (await (await t.client(`/status/${id}`)).json()) as JobJson;

describe("job-take", () => {
  it("answers a waiting take as soon as a job arrives (long-poll)", async () => {
    const worker = t.worker("w1");
    const taking = worker.take();
    await eventually(
      () => t.platform.scheduler.endpoint(ENDPOINT)!.queue.waitingTakers === 1,
      "the parked take",
    );
    const id = await run({ prompt: "hi" });
    expect(await taking).toEqual({ id, input: { prompt: "hi" } });
  });

  it("hands the request's s3Config to the worker with the job, and /status never shows it", async () => {
    const s3Config = {
      accessId: "AK",
      accessSecret: "SK",
      bucketName: "out",
      endpointUrl: "https://s3.example",
    };
    const id = await run({ prompt: "hi" }, { s3Config });
    expect(await t.worker("w1").takeOne()).toEqual({ id, input: { prompt: "hi" }, s3Config });
    expect(JSON.stringify(await status(id))).not.toContain("SK");
    const bad = await t.client("/run", { body: { input: 1, s3Config: { bucketName: "out" } } });
    expect(bad.status).toBe(400);
  });

  it("hands the request's webhook to the worker with the job, as the platform does", async () => {
    const id = await run({ prompt: "hi" }, { webhook: "http://127.0.0.1:9/hook" });
    expect(await t.worker("w1").takeOne()).toEqual({
      id,
      input: { prompt: "hi" },
      webhook: "http://127.0.0.1:9/hook",
    });
  });

  it("answers 204 when no job came during the long-poll", async () => {
    const response = await t.worker("w1").takeRaw();
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
  });

  it("sends each job to one worker only, in order", async () => {
    const ids = [await run(1), await run(2), await run(3)];
    const a = await t.worker("a").takeOne();
    const b = await t.worker("b").takeOne();
    const c = await t.worker("a").takeOne();
    expect([a.id, b.id, c.id]).toEqual(ids);
    expect((await status(ids[1]!)).workerId).toBe("b");
  });

  it("job-take-batch returns up to batch_size jobs as an array", async () => {
    const ids = [await run(1), await run(2), await run(3)];
    const worker = t.worker("wb");
    const first = await worker.takeBatch(2);
    expect(first.map((j) => j.id)).toEqual(ids.slice(0, 2));
    const second = await worker.takeBatch(5);
    expect(second).toEqual([{ id: ids[2], input: 3 }]);
    const response = await fetch(`${worker.base}/job-take-batch/wb?gpu=X&batch_size=0`, {
      headers: { authorization: t.platform.apiKey },
    });
    expect(response.status).toBe(400);
  });

  it("a take whose worker disconnected before the answer loses no job", async () => {
    const url = new URL(`${t.base()}/job-take/gone?gpu=X&job_in_progress=0`);
    const req = httpRequest(url, { headers: { authorization: t.platform.apiKey } });
    req.on("error", () => {});
    req.end();
    const queue = t.platform.scheduler.endpoint(ENDPOINT)!.queue;
    await eventually(() => queue.waitingTakers === 1, "the parked take");
    req.destroy();
    await eventually(() => queue.waitingTakers === 0, "the server to notice the disconnect");
    const id = await run("kept");
    expect(await status(id)).toMatchObject({ status: "IN_QUEUE" });
    expect(await t.worker("next").takeOne()).toEqual({ id, input: "kept" });
  });

  it("a worker that dies as its job arrives loses no job: it comes back when the worker counts as lost", async () => {
    await t.platform.close();
    t = await startTestPlatform({ workerLostMs: 300 });
    const id = await run("raced");
    const socket = connect(Number(new URL(t.platform.url).port), "127.0.0.1");
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("connect", resolve));
    const answered = new Promise((resolve) => socket.once("data", resolve));
    socket.end(
      `GET /v2/${ENDPOINT}/job-take/vanished?gpu=X&job_in_progress=0 HTTP/1.1\r\nHost: x\r\nAuthorization: ${t.platform.apiKey}\r\n\r\n`,
    );
    await answered;
    socket.destroy();
    const job = await t.worker("next").takeOne();
    expect(job).toEqual({ id, input: "raced" });
    expect(await status(id)).toMatchObject({ status: "IN_PROGRESS", workerId: "next", retries: 1 });
  });

  it("accepts the raw key and a Bearer key; anything else is 401", async () => {
    const worker = t.worker("wk");
    const url = `${worker.base}/ping/wk?gpu=X`;
    expect((await fetch(url, { headers: { authorization: t.platform.apiKey } })).status).toBe(200);
    expect((await fetch(url, { headers: { authorization: `Bearer ${t.platform.apiKey}` } })).status).toBe(
      200,
    );
    const wrong = await fetch(`${worker.base}/job-take/wk?gpu=X`, { headers: { authorization: "nope" } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: "Unauthorized: invalid API key" });
  });
});

describe("job-done", () => {
  it("accepts raw JSON labelled form-urlencoded, and application/json", async () => {
    const a = await run(1);
    const b = await run(2);
    const worker = t.worker("w1");
    await worker.takeOne();
    await worker.takeOne();
    expect((await worker.done(a, { output: "héllo ✓" })).status).toBe(200);
    expect((await worker.done(b, { output: { n: 2 } }, { json: true })).status).toBe(200);
    expect(await status(a)).toMatchObject({ status: "COMPLETED", output: "héllo ✓" });
    expect(await status(b)).toMatchObject({ status: "COMPLETED", output: { n: 2 } });
  });

  it("a body with error fails the job; an empty body completes it without output", async () => {
    const failed = await run(1);
    const empty = await run(2);
    const worker = t.worker("w1");
    await worker.takeOne();
    await worker.takeOne();
    const error = JSON.stringify({ error_type: "<class 'ValueError'>", error_message: "bad" });
    await worker.done(failed, { error });
    await worker.done(empty, {});
    expect(await status(failed)).toMatchObject({ status: "FAILED", error });
    const done = await status(empty);
    expect(done.status).toBe("COMPLETED");
    expect("output" in done).toBe(false);
  });

  it("is idempotent: the same result posted twice completes the job once", async () => {
    const id = await run(1);
    const worker = t.worker("w1");
    await worker.takeOne();
    expect((await worker.done(id, { output: "first" })).status).toBe(200);
    const again = await worker.done(id, { output: "first" });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ ignored: true });
    expect(await status(id)).toMatchObject({ status: "COMPLETED", output: "first" });
    expect(await (await t.client("/health")).json()).toMatchObject({ jobs: { completed: 1 } });
  });

  it("the first final result wins: a different one posted later is refused with 409 and logged", async () => {
    const id = await run(1);
    const worker = t.worker("w1");
    await worker.takeOne();
    expect((await worker.done(id, { output: { twice: 1330 } })).status).toBe(200);
    const other = await worker.done(id, { error: "Job result was not accepted: …" });
    expect(other.status).toBe(409);
    expect(await other.json()).toEqual({
      error: `Job ${id} already has a different final result; the first one stands`,
    });
    expect(await status(id)).toMatchObject({ status: "COMPLETED", output: { twice: 1330 } });
    expect(
      t.lines.some((l) =>
        l.includes(`${id} | Worker:w1 | job-done refused: the job already has a different final result`),
      ),
    ).toBe(true);
    expect(await (await t.client("/health")).json()).toMatchObject({ jobs: { completed: 1, failed: 0 } });
  });

  it("refuses and logs a post from a worker that does not hold the job", async () => {
    const id = await run(1);
    const early = await t.worker("w2").done(id, { output: "not taken yet" });
    expect(early.status).toBe(409);
    await t.worker("w1").takeOne();
    const response = await t.worker("w2").done(id, { output: "stolen" });
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({
      error: `Worker w2 does not hold job ${id} (status IN_PROGRESS)`,
    });
    expect((await t.worker("w2").stream(id, "x")).status).toBe(409);
    expect(t.lines.some((l) => l.includes(`${id} | Worker:w2 | job-done refused`))).toBe(true);
    expect(await status(id)).toMatchObject({ status: "IN_PROGRESS", workerId: "w1" });
  });

  it("unknown job → 404; a body that is not a JSON object → 400", async () => {
    const worker = t.worker("w1");
    expect((await worker.done("nope-e1", { output: 1 })).status).toBe(404);
    const id = await run(1);
    await worker.takeOne();
    const bad = await fetch(`${worker.base}/job-done/w1/${id}?gpu=X&isStream=false`, {
      method: "POST",
      headers: { authorization: t.platform.apiKey, "content-type": "application/x-www-form-urlencoded" },
      body: "output=1",
    });
    expect(bad.status).toBe(400);
    expect((await worker.done(id, [1, 2])).status).toBe(400);
    expect(await status(id)).toMatchObject({ status: "IN_PROGRESS" });
  });

  it("refuses a stream chunk above 1 MB with 413", async () => {
    const id = await run(1);
    const worker = t.worker("w1");
    await worker.takeOne();
    const response = await worker.stream(id, "x".repeat(1024 * 1024 + 1));
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: string }).error).toContain("1 MB");
  });
});

describe("job-stop and ping", () => {
  it("job-stop answers 204 when there is nothing to stop", async () => {
    expect(await t.worker("w1").stops()).toEqual([]);
  });

  it("a stop signal queued before the poll is delivered on the next poll", async () => {
    const id = await run(1);
    const worker = t.worker("w1");
    await worker.takeOne();
    await t.client(`/cancel/${id}`, { method: "POST" });
    expect(await worker.stops()).toEqual([id]);
    expect(await worker.stops()).toEqual([]);
  });

  it("ping takes the job_id list; status=unhealthy marks the worker and is logged", async () => {
    const id = await run(1);
    const worker = t.worker("w1");
    await worker.takeOne();
    expect((await worker.ping([id, "other"])).status).toBe(200);
    const sick = t.worker("sick");
    expect(
      (await sick.ping([], "&status=unhealthy&check=_memory_check&reason=RuntimeError%3A+low")).status,
    ).toBe(200);
    expect(await (await t.client("/health")).json()).toMatchObject({ workers: { running: 1, unhealthy: 1 } });
    expect(
      t.lines.some((l) => l.includes("Worker:sick | reported unhealthy: _memory_check: RuntimeError: low")),
    ).toBe(true);
  });
});
