// QueueWorker's take loop, shutdown and log lines: what is taken when, the lines of the runpod-python format, a
// second shutdown, fail(), the concurrency modifier, rejected items, and the job span's worker id.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isFlashError } from "../../../../src/flash-error.js";
import { defineHandler } from "../../../../src/job/definition.js";
import type { RawJob } from "../../../../src/job/types.js";
import { createLogger } from "../../../../src/log/index.js";
import { readWorkerConfig } from "../../../../src/runtime/config/options.js";
import type { PlatformClient, SerializedResult, TakeResult } from "../../../../src/runtime/queue/client.js";
import { HttpPlatformClient } from "../../../../src/runtime/queue/http-client.js";
import { platformUrls } from "../../../../src/runtime/queue/urls.js";
import { JobStopped, QueueWorker, WorkerShutdown } from "../../../../src/runtime/queue/worker.js";
import { startTracing, stopTracing } from "../../../../src/trace/index.js";
import {
  doneFor,
  gate,
  type RunningWorker,
  startWorker,
  TEST_DELIVERY,
} from "../../../conformance/harness.js";
import { RecordingPlatform } from "../../../conformance/recording-platform.js";
import { OtlpReceiver } from "../../../trace/receiver.js";

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

/** startWorker's worker, with the take backoff's random source given. */
function startJitteredWorker(random: () => number): RunningWorker {
  const { config } = readWorkerConfig([], { ...platform.env(), LOG_LEVEL: "DEBUG" });
  const lines: string[] = [];
  const log = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (l: string) => lines.push(l) },
  });
  const client = new HttpPlatformClient({ platform: config.platform, log, retry: TEST_DELIVERY });
  const worker = new QueueWorker({ definition: defineHandler(() => "after"), config, client, log, random });
  const finished = worker.run();
  return {
    worker,
    finished,
    lines,
    async stop() {
      worker.shutdown("test over");
      await finished;
    },
  };
}

const bodyOf = (id: string) => platform.of("done").find((r) => r.url.includes(`/${id}?`))?.body;
const has = (lines: string[], text: string) => lines.some((l) => l.includes(text));

describe("log lines and what is taken when", () => {
  it("logs start, jobs in progress and stop; a job taken before shutdown draws no late-take warning", async () => {
    running = startWorker(platform, () => "ok");
    platform.push({ id: "a1", input: {} });
    await platform.waitFor(doneFor("a1"));
    await platform.waitFor(() => running!.worker.inFlight === 0);
    const w = running;
    running = undefined;
    await w.stop();
    expect(has(w.lines, "| INFO | flash-worker | Worker w1 started.")).toBe(true);
    expect(has(w.lines, "| DEBUG | flash-worker | Jobs in progress: 1")).toBe(true);
    expect(w.lines.at(-1)).toMatch(/\| INFO \| flash-worker \| Worker stopped\.\n$/);
    expect(
      has(w.lines, "| INFO | flash-worker | test over: no new jobs will be taken; 0 job(s) in flight."),
    ).toBe(true);
    // The take cut off by shutdown is no failure, and a fixed concurrency never logs a change.
    expect(has(w.lines, "after shutdown began")).toBe(false);
    expect(has(w.lines, "Failed to get job")).toBe(false);
    expect(has(w.lines, "Concurrency ")).toBe(false);
  });

  it("at capacity asks for nothing: concurrency 1 with a job running sends no take until it ends", async () => {
    const release = gate();
    running = startWorker(platform, (job) => (job.id === "a" ? release.promise.then(() => "a") : "b"));
    platform.push({ id: "a", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    expect([...running.worker.jobIds]).toStrictEqual(["a"]);
    platform.push({ id: "b", input: {} });
    release.open();
    await platform.waitFor(doneFor("b"));
    // A take while "a" ran would say job_in_progress=1 (and could take "b" beside it).
    const takes = platform.of("take").map((r) => r.url);
    expect(takes.length).toBeGreaterThan(1);
    for (const url of takes) expect(url).toMatch(/job_in_progress=0$/);
  });

  it("failed takes back off from 250 ms doubling, jittered by the random source, as the error line says", async () => {
    let failures = 3;
    platform.responders.push((r) =>
      r.route === "take" && failures-- > 0 ? { status: 500, body: "down" } : undefined,
    );
    // Shares of 250, 500 and 1000 ms, less the drawn fraction of half of each.
    const draws = [0, 0.5, 0.9];
    running = startJitteredWorker(() => draws.shift() ?? 0);
    platform.push({ id: "t1", input: {} });
    await platform.waitFor(doneFor("t1"));
    const waits = running.lines
      .filter((l) => l.includes("Failed to get job. | Error Type: PlatformHttpError | Error Message: 500"))
      .map((l) => /retrying in (\S+) ms/.exec(l)?.[1]);
    expect(waits).toStrictEqual(["250", "375", "550"]);
  });

  it("with Math.random each failed take's wait lies between half its share and all of it", async () => {
    let failures = 3;
    platform.responders.push((r) =>
      r.route === "take" && failures-- > 0 ? { status: 500, body: "down" } : undefined,
    );
    running = startWorker(platform, () => "after");
    platform.push({ id: "t2", input: {} });
    await platform.waitFor(doneFor("t2"));
    const waits = running.lines
      .filter((l) => l.includes("Failed to get job."))
      .map((l) => Number(/retrying in (\S+) ms/.exec(l)?.[1]));
    expect(waits).toHaveLength(3);
    [250, 500, 1000].forEach((share, i) => {
      expect(waits[i]).toBeGreaterThanOrEqual(share / 2);
      expect(waits[i]).toBeLessThanOrEqual(share);
    });
  });

  it("a rejected item's refused error post is logged under the job's own name", async () => {
    platform.responders.push((r) =>
      r.route === "done" && r.url.includes("/refused?") ? { status: 409, body: "held" } : undefined,
    );
    platform.push({ id: "refused" });
    running = startWorker(platform, () => "never");
    await platform.waitFor(() => has(running!.lines, "Failed to return job results."));
    const failed = running.lines.find((l) => l.includes("Failed to return job results."));
    expect(failed).toMatch(/ \| ERROR \| refused \| Failed to return job results\. \| the platform refused /);
  });

  it("a job id holding a lone UTF-16 surrogate, which no URL can carry, is dropped with a log line; the next job runs", async () => {
    platform.push({ id: "bad\ud800id", input: {} });
    platform.push({ id: "after", input: {} });
    running = startWorker(platform, () => "ran");
    await platform.waitFor(doneFor("after"));
    expect(JSON.parse(bodyOf("after")!)).toStrictEqual({ output: "ran" });
    expect(
      has(
        running.lines,
        'job-take returned an item that cannot be answered: Job id "bad\\ud800id" holds a lone UTF-16 surrogate, which no URL can carry.',
      ),
    ).toBe(true);
    expect(platform.of("done").filter((r) => r.url.includes("/bad"))).toEqual([]);
  });
});

describe("the concurrency modifier", () => {
  it("a change is logged once, as `Concurrency old -> new.`; an unchanged value logs nothing", async () => {
    const release = gate();
    let wanted = 1;
    running = startWorker(platform, () => release.promise.then(() => "ok"), { concurrency: () => wanted });
    platform.push({ id: "c1", input: {} });
    await platform.waitFor(() => running!.worker.inFlight === 1);
    wanted = 2;
    await platform.waitFor((rs) => rs.some((r) => r.route === "take" && r.url.endsWith("job_in_progress=1")));
    release.open();
    await platform.waitFor(doneFor("c1"));
    const w = running;
    running = undefined;
    await w.stop();
    const changes = w.lines.filter((l) => l.includes("Concurrency ")).map((l) => l.split(" | ").at(-1));
    expect(changes).toStrictEqual(["Concurrency 1 -> 2.\n"]);
  });

  it("a concurrency function that throws is logged once with its message, and the last good value is kept", async () => {
    let asks = 0;
    const release = gate();
    running = startWorker(platform, () => release.promise.then(() => "served"), {
      concurrency: () => {
        asks++;
        throw new Error("no GPU info");
      },
    });
    platform.push({ id: "n1", input: {} });
    // At capacity the worker asks again every 250 ms: each throw is a new Error, logged once all the same.
    await platform.waitFor(() => asks >= 3);
    release.open();
    await platform.waitFor(doneFor("n1"));
    const errors = running.lines.filter((l) => l.includes("concurrency function returned"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(
      "| ERROR | flash-worker | concurrency function returned an error (no GPU info); expected a whole number >= 1. Keeping concurrency 1.",
    );
    expect(JSON.parse(bodyOf("n1")!)).toStrictEqual({ output: "served" });
  });
});

/** A worker with a 3600 s grace whose handler never ends, once it is running job `id`. */
async function stuckJob(id: string): Promise<RunningWorker> {
  const started = gate();
  const w = startWorker(
    platform,
    () => {
      started.open();
      return new Promise(() => {});
    },
    {},
    { FLASH_GRACE_PERIOD: "3600" },
  );
  platform.push({ id, input: {} });
  await started.promise;
  return w;
}

describe("shutdown", () => {
  it("a second shutdown ends the grace period at once: the job in flight gets its shutdown error", async () => {
    const w = await stuckJob("stuck");
    w.worker.shutdown("SIGTERM received");
    await platform.waitFor(() => has(w.lines, "Waiting up to 3600 s for 1 job(s) to finish."));
    w.worker.shutdown("SIGTERM received");
    await w.finished;
    expect(
      has(
        w.lines,
        "| INFO | flash-worker | SIGTERM received: no new jobs will be taken; 1 job(s) in flight.",
      ),
    ).toBe(true);
    expect(
      has(
        w.lines,
        "| WARN | flash-worker | SIGTERM received again: not waiting for in-flight jobs any longer.",
      ),
    ).toBe(true);
    expect(JSON.parse(bodyOf("stuck")!)).toStrictEqual({
      error: "Worker shut down before the job finished (grace period of 3600 s ran out).",
    });
  });

  it("two shutdowns before the drain began end the grace at once: the job in flight gets its shutdown error", async () => {
    const w = await stuckJob("twice");
    // Two signals in a row (SIGTERM then SIGINT): the second comes before the drain starts its 3600 s wait.
    w.worker.shutdown("SIGTERM received");
    w.worker.shutdown("SIGINT received");
    await w.finished;
    expect(JSON.parse(bodyOf("twice")!)).toStrictEqual({
      error: "Worker shut down before the job finished (grace period of 3600 s ran out).",
    });
  });

  it("a second shutdown before the drain began is no error", async () => {
    const w = startWorker(platform, () => "never");
    await platform.waitFor((rs) => rs.some((r) => r.route === "take"));
    w.worker.shutdown("SIGTERM received");
    expect(() => w.worker.shutdown("SIGINT received")).not.toThrow();
    await w.finished;
    expect(has(w.lines, "SIGINT received again: not waiting for in-flight jobs any longer.")).toBe(true);
  });

  it("fail() stops taking and answers the job in flight with the reason", async () => {
    const started = gate();
    const w = startWorker(platform, () => {
      started.open();
      return new Promise(() => {});
    });
    platform.push({ id: "m1", input: {} });
    await started.promise;
    w.worker.fail("Model server died", new Error("model server exited with code 1"));
    await w.finished;
    expect(JSON.parse(bodyOf("m1")!)).toStrictEqual({ error: "model server exited with code 1" });
    expect(has(w.lines, "Model server died: no new jobs will be taken; 1 job(s) in flight.")).toBe(true);
  });

  it("the drain waits for a rejected item's answer, which names the job in its log line", async () => {
    const answer = gate();
    platform.responders.push(async (r) => {
      if (r.route !== "done" || !r.url.includes("/no-input?")) return undefined;
      await answer.promise;
      return { status: 200, body: "{}" };
    });
    platform.push({ id: "no-input" });
    const w = startWorker(platform, () => "never");
    await platform.waitFor((rs) => rs.some((r) => r.route === "done" && r.url.includes("/no-input?")));
    w.worker.shutdown("SIGTERM received");
    await platform.waitFor(() => has(w.lines, "Waiting up to 30 s for 1 job(s) to finish."));
    answer.open();
    await w.finished;
    expect(JSON.parse(bodyOf("no-input")!)).toStrictEqual({ error: "Job has missing field(s): input." });
    expect(
      has(w.lines, 'ERROR | flash-worker | Job has missing field(s): input. | {"jobId":"no-input"}'),
    ).toBe(true);
    expect(has(w.lines, "Grace period over")).toBe(false);
  });
});

/** A platform held in memory whose job-take answers are the test's to give, whenever it likes. */
class HeldTakes implements PlatformClient {
  readonly urls;
  readonly takes: Array<(answer: TakeResult) => void> = [];
  readonly posted: Array<{ jobId: string; body: string }> = [];
  private onTake: (() => void) | undefined;

  constructor(
    config: ReturnType<typeof readWorkerConfig>["config"],
    private readonly onAbort: "empty" | "throw" | "ignore",
  ) {
    this.urls = platformUrls(config.platform);
  }

  /** Resolves with the answer function of take number `n` (from 1) once it is asked. */
  async take_(n: number): Promise<(answer: TakeResult) => void> {
    while (this.takes.length < n) await new Promise<void>((r) => (this.onTake = r));
    return this.takes[n - 1]!;
  }

  take(_count: number, _inProgress: boolean, signal: AbortSignal): Promise<TakeResult> {
    return new Promise((resolve, reject) => {
      this.takes.push(resolve);
      this.onTake?.();
      if (this.onAbort === "ignore") return;
      signal.addEventListener("abort", () =>
        this.onAbort === "empty"
          ? resolve({ jobs: [], rejected: [] })
          : reject(new DOMException("This operation was aborted", "AbortError")),
      );
    });
  }

  async done(jobId: string, { json }: SerializedResult): Promise<void> {
    this.posted.push({ jobId, body: json });
  }

  async stream(): Promise<void> {}
  async progress(): Promise<void> {}

  stopSignals(signal: AbortSignal): Promise<string[]> {
    return new Promise((resolve) => signal.addEventListener("abort", () => resolve([])));
  }

  async ping(): Promise<number> {
    return 200;
  }

  async reportUnhealthy(): Promise<void> {}
}

function held(onAbort: "empty" | "throw" | "ignore") {
  const { config } = readWorkerConfig([], platform.env());
  const lines: string[] = [];
  const log = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (l: string) => lines.push(l) },
  });
  const client = new HeldTakes(config, onAbort);
  const worker = new QueueWorker({ definition: defineHandler(() => "ran"), config, client, log });
  return { client, worker, lines, finished: worker.run() };
}

describe("a take outstanding at shutdown", () => {
  it("one answered with jobs after shutdown began is run, with a warning", async () => {
    const { client, worker, lines, finished } = held("ignore");
    const answer = await client.take_(1);
    worker.shutdown("SIGTERM received");
    const late: RawJob = { id: "late", input: 1 };
    answer({ jobs: [late], rejected: [] });
    await finished;
    expect(client.posted).toStrictEqual([{ jobId: "late", body: '{"output":"ran"}' }]);
    expect(
      has(
        lines,
        "| WARN | flash-worker | job-take answered after shutdown began; running the 1 job(s) it gave.",
      ),
    ).toBe(true);
  });

  it("one cut off by shutdown with no jobs draws no warning", async () => {
    const { client, worker, lines, finished } = held("empty");
    await client.take_(1);
    worker.shutdown("SIGTERM received");
    await finished;
    expect(client.takes).toHaveLength(1);
    expect(has(lines, "after shutdown began")).toBe(false);
    expect(has(lines, "Worker stopped.")).toBe(true);
  });

  it("one that fails because shutdown aborted it is not logged as a failed take", async () => {
    const { client, worker, lines, finished } = held("throw");
    await client.take_(1);
    worker.shutdown("SIGTERM received");
    await finished;
    expect(client.takes).toHaveLength(1);
    expect(has(lines, "Failed to get job")).toBe(false);
    expect(has(lines, "Worker stopped.")).toBe(true);
  });
});

describe("errors and identity", () => {
  it("JobStopped and WorkerShutdown carry their codes and names", () => {
    const stopped = new JobStopped("stopped");
    const shutdown = new WorkerShutdown("shut down");
    expect([stopped.code, stopped.name]).toStrictEqual(["JOB_STOPPED", "JobStopped"]);
    expect([shutdown.code, shutdown.name]).toStrictEqual(["WORKER_SHUTDOWN", "WorkerShutdown"]);
    expect(isFlashError(stopped, "JOB_STOPPED")).toBe(true);
    expect(isFlashError(shutdown, "WORKER_SHUTDOWN")).toBe(true);
  });

  it("with tracing on, each job runs in a span naming the worker, and the endpoint when there is one", async () => {
    const receiver = await new OtlpReceiver().start();
    const before = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    try {
      const log = createLogger({ level: "INFO", json: false, destination: { write: () => {} } });
      await startTracing(process.env, log);
      const withEndpoint = startWorker(platform, () => "traced", {}, { RUNPOD_ENDPOINT_ID: "ep-1" });
      platform.push({ id: "t1", input: {} });
      await platform.waitFor(doneFor("t1"));
      await withEndpoint.stop();
      const without = startWorker(platform, () => "traced");
      platform.push({ id: "t2", input: {} });
      await platform.waitFor(doneFor("t2"));
      await without.stop();
      await stopTracing();
      await receiver.waitFor((spans) => spans.filter((s) => s.name === "job").length === 2);
      const job = (id: string) =>
        receiver.spans.find((s) => s.name === "job" && s.attributes["flash.job.id"] === id)?.attributes;
      expect(job("t1")).toMatchObject({ "flash.worker.id": "w1", "flash.endpoint.id": "ep-1" });
      expect(job("t2")?.["flash.worker.id"]).toBe("w1");
      expect(job("t2")).not.toHaveProperty("flash.endpoint.id");
      expect(JSON.parse(bodyOf("t1")!)).toStrictEqual({ output: "traced" });
    } finally {
      if (before === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = before;
      await receiver.close();
    }
  });
});
