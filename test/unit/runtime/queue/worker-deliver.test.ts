// QueueWorker's job run and delivery as the platform and the log see them, in-process against the recording
// platform: what is posted for a result, an error or a stream; refused results; the delivery limit; the job-stop
// poll; the drain on shutdown; the job spans when tracing (docs/protocol.md §3.3, §3.4, §5, §11.2).
import { context, propagation, trace } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import { LARGE_OUTPUT_ADVICE, OFFLOAD_OVER_BYTES } from "../../../../src/runtime/queue/large-output.js";
import { STREAM_CHUNK_LIMIT_BYTES } from "../../../../src/runtime/queue/worker.js";
import { startTracing, stopTracing } from "../../../../src/trace/index.js";
import { gate, type RunningWorker, startWorker } from "../../../conformance/harness.js";
import { type Recorded, RecordingPlatform } from "../../../conformance/recording-platform.js";
import { type LocalS3, startS3 } from "../../../files/s3rver.js";
import { OtlpReceiver, type ReceivedSpan, spanTree } from "../../../trace/receiver.js";

let platform: RecordingPlatform;
let running: RunningWorker | undefined;

beforeEach(async () => {
  platform = await new RecordingPlatform().start();
});

afterEach(async () => {
  await running?.stop();
  running = undefined;
  await platform.close();
});

const isResult = (r: Recorded, id: string) =>
  r.route === "done" && r.url.includes(`/${id}?`) && !r.body.includes("IN_PROGRESS");
const doneFor = (id: string) => (rs: Recorded[]) => rs.some((r) => isResult(r, id));
const donesFor = (id: string) => platform.requests.filter((r) => isResult(r, id));
/** The one result posted for the job, its URL and parsed body. */
const resultOf = (id: string) => {
  const [done, ...more] = donesFor(id);
  expect(more).toStrictEqual([]);
  return { url: done!.url, body: JSON.parse(done!.body) as Record<string, unknown> };
};
/** The job's log lines at a level, message only (the text format is `time | LEVEL | job id | message`). */
const jobLines = (w: RunningWorker, id: string, level: string) =>
  w.lines
    .filter((l) => l.includes(` | ${level} `) && l.includes(`| ${id} |`))
    .map((l) => l.slice(l.indexOf(`| ${id} | `) + id.length + 5).trimEnd());
const logged = (w: RunningWorker, text: string) => w.lines.some((l) => l.includes(text));
const waitForLine = (w: RunningWorker, text: string) => platform.waitFor(() => logged(w, text));

describe("what is posted and logged for a job", () => {
  it("a job that succeeds logs Started. and Finished. under its id, and nothing at ERROR", async () => {
    running = startWorker(platform, () => "fine");
    platform.push({ id: "ok1", input: {} });
    await platform.waitFor(doneFor("ok1"));
    await waitForLine(running, "Finished.");
    expect(jobLines(running, "ok1", "INFO")[0]).toBe("Started.");
    expect(jobLines(running, "ok1", "INFO")).toContainEqual(expect.stringMatching(/^Finished\. \(\d+ ms\)$/));
    expect(jobLines(running, "ok1", "ERROR")).toStrictEqual([]);
  });

  it("a handler that throws is logged as runpod-python logs it, once: no line repeats the posted error", async () => {
    running = startWorker(platform, () => {
      throw new Error("bad input");
    });
    platform.push({ id: "err1", input: {} });
    await platform.waitFor(doneFor("err1"));
    await waitForLine(running, "Finished.");
    const errors = jobLines(running, "err1", "ERROR");
    expect(errors[0]).toBe("Captured Handler Exception");
    expect(errors.length).toBe(2);
    expect(JSON.parse(errors[1]!)).toMatchObject({ error_message: "bad input" });
  });

  it("an output whose serialization throws is answered with a worker error, posted as a plain result", async () => {
    const output = {
      toJSON() {
        throw new Error("cannot serialize");
      },
    };
    running = startWorker(platform, () => ({ output }));
    platform.push({ id: "ser1", input: {} });
    await platform.waitFor(doneFor("ser1"));
    expect(resultOf("ser1")).toStrictEqual({
      url: "/v2/EP/job-done/w1/ser1?gpu=X&isStream=false",
      body: { error: "Worker error while handling the job: cannot serialize" },
    });
    expect(jobLines(running, "ser1", "ERROR")).toContain("Error handling job: cannot serialize");
  });

  it("a stream chunk of exactly the 1 MB limit is posted", async () => {
    const wrapper = '{"output":""}'.length;
    const chunk = "x".repeat(STREAM_CHUNK_LIMIT_BYTES - wrapper);
    running = startWorker(platform, function* () {
      yield chunk;
    });
    platform.push({ id: "mb1", input: {} });
    await platform.waitFor(doneFor("mb1"));
    expect(platform.of("stream").map((r) => Buffer.byteLength(r.body))).toStrictEqual([
      STREAM_CHUNK_LIMIT_BYTES,
    ]);
    expect(resultOf("mb1").body).toStrictEqual({ output: [] });
  });

  it("a stream chunk not delivered within the delivery limit fails the job, naming the chunk", async () => {
    platform.responders.push((r) => (r.route === "stream" ? { status: 503, body: "down" } : undefined));
    running = startWorker(
      platform,
      function* () {
        yield "lost";
      },
      {},
      { FLASH_DELIVERY_TIMEOUT: "0.3" },
    );
    platform.push({ id: "st1", input: {} });
    await platform.waitFor(doneFor("st1"));
    expect(platform.of("stream").length).toBeGreaterThan(1);
    expect(resultOf("st1").body.error).toMatch(
      /^Stream chunk 0 could not be delivered: Stream post for job st1 failed after \d+ attempts: 503/,
    );
  });

  it("an output over the offload size with offloadOutput and no bucket fails the job naming the limit, logged at ERROR", async () => {
    const big = "y".repeat(OFFLOAD_OVER_BYTES);
    running = startWorker(platform, () => big, { offloadOutput: true });
    platform.push({ id: "big1", input: {} });
    await platform.waitFor(doneFor("big1"));
    const { error } = resultOf("big1").body;
    expect(error).toMatch(
      /^Job output is 10\.0 MB, over the platform's result limit \(\/run 10 MB, \/runsync 20 MB\), and offloadOutput has no bucket to upload it to: /,
    );
    expect(jobLines(running, "big1", "ERROR")).toStrictEqual([error]);
  });

  describe("with a bucket", () => {
    let s3: LocalS3;
    beforeEach(async () => {
      s3 = await startS3(["results"]);
    });
    afterEach(async () => {
      await s3.close();
    });

    it("an output over the offload size with offloadOutput is uploaded and its URL posted, with nothing at ERROR", async () => {
      const big = "z".repeat(OFFLOAD_OVER_BYTES);
      running = startWorker(platform, () => big, { offloadOutput: true });
      const s3Config = {
        accessId: "S3RVER",
        accessSecret: "S3RVER",
        bucketName: "results",
        endpointUrl: s3.url,
      };
      platform.push({ id: "off1", input: {}, s3Config });
      await platform.waitFor(doneFor("off1"));
      const { output } = resultOf("off1").body as { output: { output_url: string; output_bytes: number } };
      expect(output.output_bytes).toBe(OFFLOAD_OVER_BYTES + 2);
      expect(output.output_url).toContain("/results/off1/output.json");
      await waitForLine(running, "Finished.");
      expect(jobLines(running, "off1", "ERROR")).toStrictEqual([]);
    });
  });

  it("refresh_worker logs why the worker stops after the job, and the shutdown's reason", async () => {
    const w = startWorker(platform, () => "once", { refreshWorker: true });
    platform.push({ id: "rw1", input: {} });
    await w.finished;
    expect(jobLines(w, "rw1", "INFO")).toContain("refresh_worker flag set, stopping pod after job.");
    expect(logged(w, "refresh_worker: no new jobs will be taken; 1 job(s) in flight.")).toBe(true);
  });
});

describe("a result the platform refuses (docs/protocol.md §3.4)", () => {
  it("a 409 says the platform holds a result or no longer gives the job to this worker", async () => {
    platform.responders.push((r) => (r.route === "done" ? { status: 409, body: "held" } : undefined));
    running = startWorker(platform, () => "late");
    platform.push({ id: "c409", input: {} });
    await waitForLine(running, "not posting an error in its place");
    expect(jobLines(running, "c409", "ERROR")).toStrictEqual([
      "Failed to return job results. | the platform refused the 0.0 MB result with 409 Conflict: held; not posting an error in its place: the platform already holds a result for it or no longer gives it to this worker.",
    ]);
  });

  it("a 400 is logged in runpod-python's words, and the short error result posted in its place is logged too", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.body.includes('"output"') ? { status: 400, body: "no" } : undefined,
    );
    running = startWorker(platform, () => "refused");
    platform.push({ id: "r400", input: {} });
    await waitForLine(running, "Posted a short error result");
    expect(jobLines(running, "r400", "ERROR")).toStrictEqual([
      "Failed to return job results. | the platform refused the 0.0 MB result with 400 Bad Request: no",
    ]);
    expect(jobLines(running, "r400", "INFO")).toContain(
      "Posted a short error result in place of the refused one.",
    );
    expect(JSON.parse(donesFor("r400")[1]!.body)).toStrictEqual({
      error: "Job result was not accepted: the platform refused the 0.0 MB result with 400 Bad Request: no",
    });
  });

  it("the short error result in place of a refused refresh_worker result keeps stopPod", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.body.includes('"output"') ? { status: 400, body: "no" } : undefined,
    );
    const w = startWorker(platform, () => "refused", { refreshWorker: true });
    platform.push({ id: "rw400", input: {} });
    await w.finished;
    expect(donesFor("rw400").map((r) => JSON.parse(r.body))).toStrictEqual([
      { output: "refused", stopPod: true },
      {
        error: "Job result was not accepted: the platform refused the 0.0 MB result with 400 Bad Request: no",
        stopPod: true,
      },
    ]);
  });

  it("when the short error result is refused too, the job is logged as not reported at all and nothing else is posted", async () => {
    platform.responders.push((r) => (r.route === "done" ? { status: 400, body: "never" } : undefined));
    running = startWorker(platform, () => "refused");
    platform.push({ id: "r400x2", input: {} });
    await waitForLine(running, "could not be reported to the platform at all");
    expect(jobLines(running, "r400x2", "ERROR")).toStrictEqual([
      "Failed to return job results. | the platform refused the 0.0 MB result with 400 Bad Request: never",
      "Job r400x2 could not be reported to the platform at all: 400 Bad Request: never",
    ]);
    // The job's end proves nothing more was tried for it.
    await waitForLine(running, "Finished.");
    expect(donesFor("r400x2").length).toBe(2);
  });

  it("a refused result over the offload size gets the large-output advice; one of exactly that size does not", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.body.length > 1_000_000 ? { status: 400, body: "too big" } : undefined,
    );
    const wrapper = '{"output":""}'.length;
    running = startWorker(platform, (job) =>
      "a".repeat(OFFLOAD_OVER_BYTES - wrapper + (job.input as number)),
    );
    platform.push({ id: "at", input: 0 }, { id: "over", input: 1 });
    await platform.waitFor(() => donesFor("at").length === 2 && donesFor("over").length === 2);
    const refusal =
      "Job result was not accepted: the platform refused the 10.0 MB result with 400 Bad Request: too big";
    expect(JSON.parse(donesFor("at")[1]!.body)).toStrictEqual({ error: refusal });
    expect(JSON.parse(donesFor("over")[1]!.body)).toStrictEqual({
      error: `${refusal}. ${LARGE_OUTPUT_ADVICE}`,
    });
  });
});

describe("a result post that cannot be built", () => {
  it("RUNPOD_WEBHOOK_POST_OUTPUT unset (runpod-python's JOB_DONE_URL): one attempt per job, logged, never retried for an hour", async () => {
    let runs = 0;
    running = startWorker(
      platform,
      () => {
        runs++;
        return "computed";
      },
      {},
      { RUNPOD_WEBHOOK_POST_OUTPUT: "", FLASH_DELIVERY_TIMEOUT: "5" },
    );
    platform.push({ id: "u1", input: {} }, { id: "u2", input: {} });
    await platform.waitFor(
      () => running!.lines.filter((l) => l.includes("Failed to return job results")).length === 2,
    );
    expect(runs).toBe(2);
    for (const id of ["u1", "u2"]) {
      expect(jobLines(running, id, "ERROR")).toStrictEqual([
        "Failed to return job results. | Result post could not be sent: Invalid URL; nothing was sent, and the same post would fail again.",
      ]);
    }
    expect(logged(running, "retrying in")).toBe(false);
    expect(platform.of("done")).toStrictEqual([]);
  });
});

describe("the job-stop poll (docs/protocol.md §3.3)", () => {
  it("a stopped job's signal says the platform stopped it; a stop for a job not running here is logged and ignored", async () => {
    let reason: unknown;
    running = startWorker(
      platform,
      (job) =>
        new Promise((resolve) =>
          job.signal.addEventListener("abort", () => {
            reason = job.signal.reason;
            resolve("too late");
          }),
        ),
    );
    platform.push({ id: "s1", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    platform.stop("elsewhere", "s1");
    await platform.waitFor(() => running!.worker.inFlight === 0);
    expect(reason).toBeInstanceOf(Error);
    expect((reason as Error).message).toBe("Job s1 was stopped by the platform.");
    expect(logged(running, "job-stop named job elsewhere, which is not running here.")).toBe(true);
  });

  it("a failed poll is logged and polling goes on: a later stop still stops its job", async () => {
    let failures = 1;
    platform.responders.push((r) =>
      r.route === "stop" && failures-- > 0 ? { status: 500, body: "oops" } : undefined,
    );
    const stopped = gate();
    running = startWorker(
      platform,
      (job) => new Promise(() => job.signal.addEventListener("abort", () => stopped.open(), { once: true })),
    );
    await waitForLine(running, "Failed to poll job-stop: 500 Internal Server Error: oops");
    platform.push({ id: "s2", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    platform.stop("s2");
    await stopped.promise;
  });

  it("a 429 pauses polling for 5 s and is not logged as a failure", async () => {
    let throttled = 1;
    platform.responders.push((r) =>
      r.route === "stop" && throttled-- > 0 ? { status: 429, body: "{}" } : undefined,
    );
    running = startWorker(platform, () => 1);
    await platform.waitFor((rs) => rs.filter((r) => r.route === "stop").length >= 2, 30_000);
    const [first, second] = platform.of("stop");
    // A lower bound on the pause itself: a slow machine only adds.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(4_900);
    expect(logged(running, "Failed to poll job-stop")).toBe(false);
  });

  it("an empty answer given at once does not make a hot loop", async () => {
    platform.holdMs = 0;
    running = startWorker(platform, () => 1);
    await platform.waitFor((rs) => rs.filter((r) => r.route === "stop").length >= 4);
    // Each empty poll waits out the 250 ms floor counted from when it was asked (a lower bound: a slow machine only adds).
    const at = platform.of("stop").map((r) => r.at);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(200);
  });

  it("the poll cut short by shutdown is not logged as a failure", async () => {
    const w = startWorker(platform, () => 1);
    await platform.waitFor((rs) => rs.some((r) => r.route === "stop"));
    await w.stop();
    expect(logged(w, "Failed to poll job-stop")).toBe(false);
  });
});

describe("the drain on shutdown (docs/protocol.md §5)", () => {
  it("with nothing in flight, the worker stops without waiting for jobs", async () => {
    const w = startWorker(platform, () => 1);
    await platform.waitFor((rs) => rs.some((r) => r.route === "take"));
    await w.stop();
    expect(logged(w, "Worker stopped.")).toBe(true);
    expect(logged(w, "Waiting up to")).toBe(false);
    expect(logged(w, "Grace period over")).toBe(false);
  });

  it("a job that finishes within the grace is not reported as failed", async () => {
    const release = gate();
    const w = startWorker(
      platform,
      () => release.promise.then(() => "in time"),
      {},
      { FLASH_GRACE_PERIOD: "30" },
    );
    platform.push({ id: "g1", input: {} });
    await platform.waitFor(() => w.worker.inFlight === 1);
    w.worker.shutdown("SIGTERM received");
    await waitForLine(w, "Waiting up to 30 s for 1 job(s) to finish.");
    release.open();
    await w.finished;
    expect(resultOf("g1").body).toStrictEqual({ output: "in time" });
    expect(logged(w, "Grace period over")).toBe(false);
  });

  it("a job still running when the grace runs out gets its shutdown error as a plain result, and the log says so", async () => {
    const w = startWorker(platform, () => new Promise(() => {}), {}, { FLASH_GRACE_PERIOD: "1" });
    platform.push({ id: "g2", input: {} });
    await platform.waitFor(() => w.worker.inFlight === 1);
    w.worker.shutdown("SIGTERM received");
    await w.finished;
    expect(resultOf("g2")).toStrictEqual({
      url: "/v2/EP/job-done/w1/g2?gpu=X&isStream=false",
      body: { error: "Worker shut down before the job finished (grace period of 1 s ran out)." },
    });
    expect(logged(w, "Waiting up to 1 s for 1 job(s) to finish.")).toBe(true);
    expect(logged(w, "Grace period over: reporting 1 unfinished job(s) as failed.")).toBe(true);
  });
});

describe("job spans when tracing (docs/design.md §4 item 9)", () => {
  let receiver: OtlpReceiver;
  const saved = { ...process.env };

  beforeAll(async () => {
    receiver = await new OtlpReceiver().start();
    // The SDK reads its exporter and batch settings from the environment; a short delay sends spans promptly.
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = "20";
    await startTracing(process.env, createLogger({ level: "SILENT", json: false }));
  });

  afterAll(async () => {
    await stopTracing();
    // The SDK registered itself globally: unregistered, so a later run in this process can register again.
    trace.disable();
    context.disable();
    propagation.disable();
    for (const name of ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_BSP_SCHEDULE_DELAY"]) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await receiver.close();
  });

  const jobSpan = (id: string) => (spans: ReceivedSpan[]) =>
    spans.find((s) => s.name === "job" && s.attributes["flash.job.id"] === id);
  const children = (spans: ReceivedSpan[], parent: ReceivedSpan) =>
    spans.filter((s) => s.parentSpanId === parent.spanId).map((s) => s.name);

  it("each job's span ends with the status the platform shows, with its stream and result posts as children", async () => {
    running = startWorker(platform, async function* (job) {
      if (job.input === "fail") throw new Error("failed on purpose");
      if (job.input === "stop") {
        yield "before the stop";
        await new Promise(() => {});
      }
      yield "chunk";
    });
    platform.push(
      { id: "t-ok", input: "ok" },
      { id: "t-fail", input: "fail" },
      { id: "t-stop", input: "stop" },
    );
    await platform.waitFor((rs) => doneFor("t-ok")(rs) && doneFor("t-fail")(rs));
    await platform.waitFor((rs) => rs.some((r) => r.route === "stream" && r.url.includes("/t-stop?")));
    platform.stop("t-stop");
    const ids = ["t-ok", "t-fail", "t-stop"];
    await receiver.waitFor((spans) => ids.every((id) => jobSpan(id)(spans)));
    const spans = receiver.spans;
    const status = (id: string) => jobSpan(id)(spans)!.attributes["flash.job.status"];
    expect(ids.map(status), spanTree(spans)).toStrictEqual(["COMPLETED", "FAILED", "CANCELLED"]);
    expect(children(spans, jobSpan("t-ok")(spans)!).sort()).toStrictEqual([
      "handler",
      "result post",
      "stream post",
    ]);
    expect(
      platform
        .of("stream")
        .filter((r) => r.url.includes("/t-ok?"))
        .map((r) => r.body),
    ).toStrictEqual(['{"output":"chunk"}']);
    expect(resultOf("t-ok").body).toStrictEqual({ output: [] });
    expect(donesFor("t-stop")).toStrictEqual([]);
  });
});
