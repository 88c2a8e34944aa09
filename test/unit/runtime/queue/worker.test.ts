// QueueWorker's loop on its own: take, run, report, stop, drain, against an in-memory PlatformClient (no server).
import { describe, expect, it } from "vitest";
import { defineHandler, type HandlerOptions } from "../../../../src/job/definition.js";
import type { HandlerFn, JobResult, RawJob } from "../../../../src/job/types.js";
import { createLogger } from "../../../../src/log/index.js";
import { readWorkerConfig } from "../../../../src/runtime/config/options.js";
import {
  type PlatformClient,
  PlatformHttpError,
  type RejectedJob,
  type SerializedResult,
  type TakeResult,
} from "../../../../src/runtime/queue/client.js";
import { platformUrls } from "../../../../src/runtime/queue/urls.js";
import { QueueWorker } from "../../../../src/runtime/queue/worker.js";

const ENV = {
  RUNPOD_WEBHOOK_GET_JOB: "http://platform.invalid/v2/EP/job-take/$ID",
  RUNPOD_WEBHOOK_POST_OUTPUT: "http://platform.invalid/v2/EP/job-done/$RUNPOD_POD_ID/$ID",
  RUNPOD_WEBHOOK_POST_STREAM: "http://platform.invalid/v2/EP/job-stream/$RUNPOD_POD_ID/$ID",
  RUNPOD_POD_ID: "w1",
  RUNPOD_AI_API_KEY: "k",
};

interface Posted {
  jobId: string;
  result: JobResult;
  isStream: boolean;
}

/** The worker's side of the protocol, answered from memory: jobs and stop ids are handed out as the test pushes them. */
class MemoryPlatform implements PlatformClient {
  readonly urls;
  readonly answers: Posted[] = [];
  readonly streamed: Array<{ jobId: string; output: unknown }> = [];
  readonly progressed: Array<{ jobId: string; output: unknown }> = [];
  refuseFirstResult = false;
  /** Result posts take this long to answer. */
  doneDelayMs = 0;
  private jobs: RawJob[] = [];
  private rejects: RejectedJob[] = [];
  private stops: string[] = [];
  private waiters: Array<() => void> = [];
  private onPost: Array<() => void> = [];

  constructor(config: ReturnType<typeof readWorkerConfig>["config"]) {
    this.urls = platformUrls(config.platform);
  }

  push(...jobs: RawJob[]): void {
    this.jobs.push(...jobs);
    this.notify();
  }

  /** An item job-take handed over that is not a job (an id without input). */
  pushRejected(rejected: RejectedJob): void {
    this.rejects.push(rejected);
    this.notify();
  }

  stop(id: string): void {
    this.stops.push(id);
    this.notify();
  }

  /** Resolves once `count` results have been posted. */
  async results(count: number): Promise<Posted[]> {
    while (this.answers.length < count) await new Promise<void>((r) => this.onPost.push(r));
    return this.answers;
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  private async until<T>(ready: () => T | undefined, signal: AbortSignal, empty: T): Promise<T> {
    for (;;) {
      const value = ready();
      if (value !== undefined) return value;
      if (signal.aborted) return empty;
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }

  take(count: number, _inProgress: boolean, signal: AbortSignal): Promise<TakeResult> {
    const empty: TakeResult = { jobs: [], rejected: [] };
    return this.until(
      () =>
        this.jobs.length > 0 || this.rejects.length > 0
          ? { jobs: this.jobs.splice(0, count), rejected: this.rejects.splice(0) }
          : undefined,
      signal,
      empty,
    );
  }

  async done(jobId: string, { result, json }: SerializedResult, isStream: boolean): Promise<void> {
    expect(json).toBe(JSON.stringify(result));
    if (this.doneDelayMs > 0) await new Promise((r) => setTimeout(r, this.doneDelayMs));
    if (this.refuseFirstResult) {
      this.refuseFirstResult = false;
      throw new PlatformHttpError(413, "Payload Too Large", "too big", `done/${jobId}`);
    }
    this.answers.push({ jobId, result, isStream });
    for (const wake of this.onPost.splice(0)) wake();
  }

  async stream(jobId: string, output: unknown): Promise<void> {
    this.streamed.push({ jobId, output });
  }

  async progress(jobId: string, output: unknown): Promise<void> {
    this.progressed.push({ jobId, output });
  }

  stopSignals(signal: AbortSignal): Promise<string[]> {
    return this.until(() => (this.stops.length > 0 ? this.stops.splice(0) : undefined), signal, []);
  }

  async ping(): Promise<number> {
    return 200;
  }

  async reportUnhealthy(): Promise<void> {}
}

function setup(fn: HandlerFn, options: HandlerOptions = {}, env: Record<string, string> = {}) {
  const { config } = readWorkerConfig([], { ...ENV, ...env });
  const lines: string[] = [];
  const log = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (l: string) => lines.push(l) },
  });
  const platform = new MemoryPlatform(config);
  const worker = new QueueWorker({ definition: defineHandler(fn, options), config, client: platform, log });
  const finished = worker.run();
  const stop = async () => {
    worker.shutdown("test over");
    await finished;
  };
  return { platform, worker, finished, lines, stop };
}

describe("QueueWorker", () => {
  it("answers a job-take item it cannot run, then takes the next job (concurrency 1)", async () => {
    const { platform, stop } = setup(() => "ran");
    // Its answer outlasts the empty take's pause: only the answer's end can free the worker's one slot.
    platform.doneDelayMs = 400;
    platform.pushRejected({ id: "bad", reason: "Job has missing field(s): input." });
    expect(await platform.results(1)).toEqual([
      { jobId: "bad", result: { error: "Job has missing field(s): input." }, isStream: false },
    ]);
    platform.push({ id: "j2", input: {} });
    const answers = await platform.results(2);
    expect(answers[1]).toEqual({ jobId: "j2", result: { output: "ran" }, isStream: false });
    await stop();
  });

  it("takes a job, runs the handler and posts its output", async () => {
    const { platform, stop } = setup((job) => ({ doubled: (job.input as number) * 2 }));
    platform.push({ id: "j1", input: 21 });
    expect(await platform.results(1)).toEqual([
      { jobId: "j1", result: { output: { doubled: 42 } }, isStream: false },
    ]);
    await stop();
  });

  it("streams a generator's chunks, then posts the aggregate as a stream result", async () => {
    const { platform, stop } = setup(
      async function* () {
        yield "a";
        yield "b";
      },
      { returnAggregateStream: true },
    );
    platform.push({ id: "g1", input: null });
    const [posted] = await platform.results(1);
    expect(platform.streamed).toEqual([
      { jobId: "g1", output: "a" },
      { jobId: "g1", output: "b" },
    ]);
    expect(posted).toEqual({ jobId: "g1", result: { output: ["a", "b"] }, isStream: true });
    await stop();
  });

  it("a job the platform stops is aborted and gets no result", async () => {
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const { platform, lines, stop } = setup(async (job) => {
      if (job.id === "long") {
        started();
        await new Promise((resolve) => job.signal.addEventListener("abort", resolve, { once: true }));
        return "too late";
      }
      return "quick";
    });
    platform.push({ id: "long", input: 1 });
    await running;
    platform.stop("long");
    platform.push({ id: "after", input: 2 });
    expect(await platform.results(1)).toEqual([
      { jobId: "after", result: { output: "quick" }, isStream: false },
    ]);
    expect(lines.some((l) => l.includes("long") && l.includes("Job stopped."))).toBe(true);
    await stop();
    expect(platform.answers.map((d) => d.jobId)).toEqual(["after"]);
  });

  it("a result the platform refuses is replaced by a short error result (runpod-python #309)", async () => {
    const { platform, stop } = setup(() => "x".repeat(100));
    platform.refuseFirstResult = true;
    platform.push({ id: "big", input: 1 });
    const [posted] = await platform.results(1);
    expect(posted?.jobId).toBe("big");
    expect(posted?.result.error).toMatch(
      /^Job result was not accepted: the platform refused the 0\.0 MB result with 413/,
    );
    await stop();
  });

  it("shutdown lets the job in flight finish, and takes nothing new", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let began!: () => void;
    const running = new Promise<void>((r) => {
      began = r;
    });
    const { platform, worker, finished } = setup(async () => {
      began();
      await gate;
      return "finished";
    });
    platform.push({ id: "in-flight", input: 1 });
    await running;
    worker.shutdown("SIGTERM received");
    platform.push({ id: "not-taken", input: 2 });
    release();
    await finished;
    expect(platform.answers).toEqual([
      { jobId: "in-flight", result: { output: "finished" }, isStream: false },
    ]);
  });

  it("a handler that throws answers with the runpod-python error fields", async () => {
    const { platform, stop } = setup(() => {
      throw new TypeError("bad input");
    });
    platform.push({ id: "e1", input: 1 });
    const [posted] = await platform.results(1);
    const error = JSON.parse(String(posted?.result.error)) as Record<string, unknown>;
    expect(error.error_type).toBe("<class 'TypeError'>");
    expect(error.error_message).toBe("bad input");
    expect(error.worker_id).toBe("w1");
    await stop();
  });
});
