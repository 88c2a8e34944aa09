// The queue worker: takes jobs, runs them through the job engine, reports them, drains on shutdown.

import { FlashError, isFlashError } from "../../flash-error.js";
import { type Backoff, backoffMs, type RandomSource, sleep } from "../../http/retry.js";
import { type HandlerDefinition, isValidConcurrency } from "../../job/definition.js";
import { executeJob } from "../../job/execute.js";
import { jobLogBindings } from "../../job/scope.js";
import type { JobResult, RawJob } from "../../job/types.js";
import { describeError, type Logger } from "../../log/index.js";
import { type JobSpan, tracing } from "../../trace/index.js";
import type { WorkerConfig } from "../config/options.js";
import {
  type DeliveryBound,
  isPlatformHttpError,
  type PlatformClient,
  type RejectedJob,
  type SerializedResult,
  serializeResult,
} from "./client.js";
import { fitResult, LARGE_OUTPUT_ADVICE, megabytes, OFFLOAD_OVER_BYTES } from "./large-output.js";
import { ProgressSender } from "./progress.js";

/** The platform stopped this job through job-stop (cancel or timeout): nothing is posted for it (docs/protocol.md §3.3). */
export class JobStopped extends FlashError {
  readonly code = "JOB_STOPPED";
  override name = "JobStopped";
}

/** The worker is shutting down and the grace period ran out before this job finished. */
export class WorkerShutdown extends FlashError {
  readonly code = "WORKER_SHUTDOWN";
  override name = "WorkerShutdown";
}

/** A stream chunk over the platform's limit: refused before it is posted. */
export class StreamChunkTooLargeError extends FlashError {
  readonly code = "STREAM_CHUNK_TOO_LARGE";
  override name = "StreamChunkTooLargeError";
}

/** Where in-flight job ids go for the heartbeat; it runs off the main thread. */
export interface JobIdsListener {
  update(jobIds: Iterable<string>): void;
}

export interface WorkerOptions {
  definition: HandlerDefinition;
  config: WorkerConfig;
  client: PlatformClient;
  log: Logger;
  heartbeat?: JobIdsListener;
  /** The take backoff's jitter (Math.random by default). */
  random?: RandomSource;
}

/** One stream chunk may be at most 1 MB (docs/protocol.md §4.3); larger ones fail the job with a clear message. */
export const STREAM_CHUNK_LIMIT_BYTES = 1024 * 1024;
/** When at capacity, re-ask the concurrency modifier at least this often. */
const CAPACITY_RECHECK_MS = 250;
/** An empty take or stop poll answered faster than this waits out the rest: no hot loop on instant 204s. */
const EMPTY_POLL_FLOOR_MS = 250;
/** 429 from job-take or job-stop: pause as runpod-python does (docs/protocol.md §3.2). */
const THROTTLE_MS = 5000;
/** Take failures back off from 250 ms doubling to 10 s, jittered, so a platform outage is not hammered in lockstep. */
const TAKE_ERROR_BACKOFF: Backoff = { baseMs: 250, maxMs: 10_000 };

interface RunningJob {
  controller: AbortController;
  finished: Promise<void>;
}

/**
 * The queue worker: take jobs, run them through the job engine, report them; a stop channel cancels
 * single jobs, and shutdown drains in-flight jobs within the grace period (docs/protocol.md §5).
 */
export class QueueWorker {
  private readonly running = new Map<string, RunningJob>();
  private concurrency = 1;
  private stopping = false;
  private readonly stopController = new AbortController();
  private wake: (() => void) | undefined;
  private badConcurrency: string | undefined;
  private endGrace: (() => void) | undefined;
  /** Aborted when the shutdown grace runs out: result posts stop retrying then. */
  private readonly graceOver = new AbortController();

  constructor(private readonly options: WorkerOptions) {}

  get inFlight(): number {
    return this.running.size;
  }

  /** The ids of the jobs in flight now. */
  get jobIds(): Iterable<string> {
    return this.running.keys();
  }

  /** Runs until shutdown() and the drain finish. */
  async run(): Promise<void> {
    const { log } = this.options;
    log.info(`Worker ${this.options.config.platform.workerId} started.`);
    const stopLoop = this.monitorStops();
    await this.takeLoop();
    await this.drain();
    await stopLoop;
    log.info("Worker stopped.");
  }

  /** Stop taking jobs; in-flight jobs get the grace period. A second call ends the grace period at once. */
  shutdown(reason: string): void {
    if (this.stopping) {
      this.options.log.warn(`${reason} again: not waiting for in-flight jobs any longer.`);
      this.endGrace?.();
      this.graceOver.abort();
      return;
    }
    this.options.log.info(`${reason}: no new jobs will be taken; ${this.running.size} job(s) in flight.`);
    this.stopping = true;
    this.stopController.abort();
    this.wake?.();
  }

  /** Stops taking jobs and fails each job in flight with `reason` (e.g. its model server died); every one is answered. */
  fail(why: string, reason: Error): void {
    this.shutdown(why);
    for (const job of this.running.values()) job.controller.abort(reason);
  }

  private scale(): number {
    const { concurrency } = this.options.definition;
    if (typeof concurrency === "number") return concurrency;
    let wanted: unknown;
    try {
      wanted = concurrency(this.concurrency);
    } catch (err) {
      wanted = err;
    }
    if (isValidConcurrency(wanted)) {
      this.badConcurrency = undefined;
      return wanted;
    }
    // Log each distinct bad value once (a throw by its message: each is a new Error), and keep the last good
    // concurrency (runpod-python #458 crashed here).
    const bad = wanted instanceof Error ? `an error (${wanted.message})` : String(wanted);
    if (bad !== this.badConcurrency) {
      this.badConcurrency = bad;
      this.options.log.error(
        `concurrency function returned ${bad}; expected a whole number >= 1. Keeping concurrency ${this.concurrency}.`,
      );
    }
    return this.concurrency;
  }

  /** Resolves when a job finishes, shutdown starts, or (a concurrency function to re-ask) the timeout passes. */
  private waitForChange(ms: number): Promise<void> {
    // A fixed concurrency has nothing to re-ask: no timer set and cleared per job.
    if (typeof this.options.definition.concurrency === "number") {
      return new Promise((resolve) => {
        this.wake = () => {
          this.wake = undefined;
          resolve();
        };
      });
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
    });
  }

  private async takeLoop(): Promise<void> {
    const { client, log } = this.options;
    let failures = 0;
    while (!this.stopping) {
      const wanted = this.scale();
      if (wanted !== this.concurrency) log.info(`Concurrency ${this.concurrency} -> ${wanted}.`);
      this.concurrency = wanted;
      const needed = this.concurrency - this.running.size;
      if (needed <= 0) {
        await this.waitForChange(CAPACITY_RECHECK_MS);
        continue;
      }
      const asked = performance.now();
      try {
        const taken = await client.take(needed, this.running.size > 0, this.stopController.signal);
        failures = 0;
        if (this.stopping && taken.jobs.length > 0) {
          log.warn(
            `job-take answered after shutdown began; running the ${taken.jobs.length} job(s) it gave.`,
          );
        }
        for (const job of taken.jobs) this.start(job);
        for (const rejected of taken.rejected) this.reject(rejected);
        if (taken.jobs.length > 0) log.debug(`Jobs in progress: ${this.running.size}`);
        else await sleep(EMPTY_POLL_FLOOR_MS - (performance.now() - asked), this.stopController.signal);
      } catch (err) {
        if (this.stopping) break;
        if (isFlashError(err, "PLATFORM_TOO_MANY_REQUESTS")) {
          log.warn(`${err.message}; waiting ${THROTTLE_MS / 1000} s.`);
          await sleep(THROTTLE_MS, this.stopController.signal);
          continue;
        }
        failures++;
        const wait = backoffMs(TAKE_ERROR_BACKOFF, failures, this.options.random);
        const name = err instanceof Error ? err.name : typeof err;
        // An answer h1 could not read may have held jobs: say what became of them.
        const held = isFlashError(err, "HTTP_MALFORMED_ANSWER")
          ? " | any job it held was not run here; the platform hands it out again once no ping names it"
          : "";
        log.error(
          `Failed to get job. | Error Type: ${name} | Error Message: ${describeError(err)}${held} | retrying in ${wait} ms`,
        );
        await sleep(wait, this.stopController.signal);
      }
    }
  }

  /** A job the platform handed over without an id or input still gets an answer when it has an id. */
  private reject(rejected: RejectedJob): void {
    const { log } = this.options;
    if (!rejected.id) {
      log.error(`job-take returned an item that cannot be answered: ${rejected.reason}`);
      return;
    }
    log.error(rejected.reason, { jobId: rejected.id });
    const id = rejected.id;
    // Named escaped: a refused id may hold a line break, which would forge a log line.
    const jobLog = log.child({ requestId: JSON.stringify(id).slice(1, -1) });
    const finished = this.deliver(id, serializeResult({ error: rejected.reason }), false, jobLog).finally(
      () => {
        this.running.delete(id);
        this.wake?.();
      },
    );
    this.running.set(id, { controller: new AbortController(), finished });
  }

  private start(raw: RawJob): void {
    const { log, heartbeat } = this.options;
    if (this.running.has(raw.id)) {
      log.warn(`job-take returned job ${raw.id} again while it is still running; ignoring the duplicate.`);
      return;
    }
    const controller = new AbortController();
    const entry: RunningJob = { controller, finished: Promise.resolve() };
    // Registered before the handler runs: a sync handler may hold the thread, and pings must name its job.
    this.running.set(raw.id, entry);
    heartbeat?.update(this.running.keys());
    // Tracing on: the job runs inside its span, so its log lines and the handler's own spans belong to it.
    const traced = tracing;
    const running = traced
      ? traced.job(raw, this.identity(), (span) => this.runJob(raw, controller.signal, span))
      : this.runJob(raw, controller.signal, undefined);
    entry.finished = running.finally(() => {
      this.running.delete(raw.id);
      heartbeat?.update(this.running.keys());
      this.wake?.();
    });
  }

  /** The job span's worker and endpoint ids. */
  private identity(): { workerId: string; endpointId?: string } {
    const { platform } = this.options.config;
    return platform.endpointId
      ? { workerId: platform.workerId, endpointId: platform.endpointId }
      : { workerId: platform.workerId };
  }

  private async runJob(raw: RawJob, signal: AbortSignal, span: JobSpan | undefined): Promise<void> {
    const { client, definition, config } = this.options;
    const log = this.options.log.child(jobLogBindings(raw));
    const progress = new ProgressSender(client, raw.id, log);
    log.info("Started.");
    // The job span's status attribute: what the platform will show for the job.
    let status = "FAILED";
    try {
      const outcome = await executeJob(definition.fn, raw, {
        span,
        worker: { workerId: config.platform.workerId, hostname: config.platform.hostname },
        log,
        signal,
        returnAggregateStream: definition.returnAggregateStream,
        refreshWorker: definition.refreshWorker,
        progress: (value) => progress.send(value),
        stream: async (chunk) => {
          const body = JSON.stringify({ output: chunk });
          const size = Buffer.byteLength(body);
          if (size > STREAM_CHUNK_LIMIT_BYTES) {
            throw new StreamChunkTooLargeError(
              `stream chunk is ${megabytes(size)}, over the platform's limit of ${megabytes(STREAM_CHUNK_LIMIT_BYTES)}`,
            );
          }
          // Retried until delivered, the job is stopped or aborted at the grace's end, or the limit passes.
          const bound = { stop: signal, deadline: Date.now() + config.deliveryTimeoutMs };
          if (!span) return client.stream(raw.id, chunk, bound);
          return span.child("stream post", () => client.stream(raw.id, chunk, bound));
        },
      });
      await progress.close();
      if (outcome.kind === "aborted") {
        if (isFlashError(outcome.reason, "JOB_STOPPED")) {
          status = "CANCELLED";
          log.info(`Job stopped. (${Math.round(outcome.handlerMs)} ms)`);
          return;
        }
        const reason = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
        await this.deliver(raw.id, serializeResult({ error: reason }), false, log, span);
        return;
      }
      // Sized before it is posted: offloaded, or failed naming the limit (docs/protocol.md §11.2).
      const fitted = await fitResult(raw, outcome.result, {
        offload: definition.offloadOutput,
        signal,
        log,
      });
      const { result } = fitted;
      if (result !== outcome.result && result.error !== undefined) log.error(String(result.error));
      await this.deliver(raw.id, fitted, outcome.isStream, log, span);
      if (result.error === undefined) status = "COMPLETED";
      log.info(`Finished. (${Math.round(outcome.handlerMs)} ms)`);
      if (outcome.result.stopPod) {
        log.info("refresh_worker flag set, stopping pod after job.");
        this.shutdown("refresh_worker");
      }
    } catch (err) {
      // Nothing a handler does may leave a taken job unanswered.
      log.error(`Error handling job: ${describeError(err)}`);
      await this.deliver(
        raw.id,
        serializeResult({ error: `Worker error while handling the job: ${describeError(err)}` }),
        false,
        log,
        span,
      );
    } finally {
      span?.end(status);
    }
  }

  /** How long a result post keeps retrying: the delivery limit, or the shutdown grace's end (docs/protocol.md §3.4). */
  private deliveryBound(): DeliveryBound {
    return { stop: this.graceOver.signal, deadline: Date.now() + this.options.config.deliveryTimeoutMs };
  }

  /**
   * Posts the result, retrying transient failures within the delivery bound; never replaces a computed result
   * with an error because the network failed. Only a definite refusal of the body (a 4xx) that no earlier attempt
   * may have been recorded before gets a short error result, so the job ends FAILED instead of hanging
   * (runpod-python #309). docs/protocol.md §3.4 has the whole policy.
   */
  private async deliver(
    jobId: string,
    result: SerializedResult,
    isStream: boolean,
    log: Logger,
    span?: JobSpan,
  ): Promise<void> {
    try {
      await this.post(jobId, result, isStream, span);
      return;
    } catch (err) {
      const bytes = Buffer.byteLength(result.json);
      const size = megabytes(bytes);
      if (isFlashError(err, "PLATFORM_DELIVERY")) {
        const when = this.graceOver.signal.aborted
          ? "before the shutdown grace ran out"
          : "within the delivery limit";
        log.error(
          `Failed to return job results. | the ${size} result could not be delivered ${when}: ${describeError(err)}. Nothing is posted in its place: the platform re-runs or fails the job once this worker stops reporting it.`,
        );
        return;
      }
      if (isFlashError(err, "HTTP_REQUEST_INVALID")) {
        log.error(
          `Failed to return job results. | ${describeError(err)}; nothing was sent, and the same post would fail again.`,
        );
        return;
      }
      if (!isPlatformHttpError(err)) throw err;
      if (err.status === 409 || err.earlierAttemptMayBeRecorded) {
        const why =
          err.status === 409
            ? "the platform already holds a result for it or no longer gives it to this worker"
            : "an earlier attempt whose answer was lost may have been recorded";
        log.error(
          `Failed to return job results. | the platform refused the ${size} result with ${err.message}; not posting an error in its place: ${why}.`,
        );
        return;
      }
      const why = `the platform refused the ${size} result with ${err.message}`;
      log.error(`Failed to return job results. | ${why}`);
      // A large output gets the way out with it; a small one was refused for another reason.
      const advice = bytes > OFFLOAD_OVER_BYTES ? `. ${LARGE_OUTPUT_ADVICE}` : "";
      const fallback: JobResult = { error: `Job result was not accepted: ${why}${advice}` };
      if (result.result.stopPod) fallback.stopPod = true;
      try {
        await this.post(jobId, serializeResult(fallback), isStream, span);
        log.info("Posted a short error result in place of the refused one.");
      } catch (again) {
        log.error(`Job ${jobId} could not be reported to the platform at all: ${describeError(again)}`);
      }
    }
  }

  /** One job-done post (with its retries), in a "result post" span of the job when tracing. */
  private post(
    jobId: string,
    result: SerializedResult,
    isStream: boolean,
    span: JobSpan | undefined,
  ): Promise<void> {
    const { client } = this.options;
    if (!span) return client.done(jobId, result, isStream, this.deliveryBound());
    return span.child("result post", () => client.done(jobId, result, isStream, this.deliveryBound()));
  }

  private async monitorStops(): Promise<void> {
    const { client, log } = this.options;
    if (!client.urls.stop) {
      log.warn("The job-take URL has no /job-take/ segment: the per-job stop channel is off.");
      return;
    }
    const signal = this.stopController.signal;
    while (!this.stopping) {
      const asked = performance.now();
      let ids: string[] = [];
      try {
        ids = await client.stopSignals(signal);
      } catch (err) {
        if (this.stopping) return;
        if (isFlashError(err, "PLATFORM_TOO_MANY_REQUESTS")) {
          await sleep(THROTTLE_MS, signal);
        } else {
          log.error(`Failed to poll job-stop: ${describeError(err)}`);
          await sleep(1000, signal);
        }
        continue;
      }
      for (const id of ids) {
        const job = this.running.get(id);
        if (!job) {
          log.debug(`job-stop named job ${id}, which is not running here.`);
          continue;
        }
        log.child({ requestId: id }).info("Stopping job.");
        job.controller.abort(new JobStopped(`Job ${id} was stopped by the platform.`));
      }
      if (ids.length === 0) await sleep(EMPTY_POLL_FLOOR_MS - (performance.now() - asked), signal);
    }
  }

  /** Lets in-flight jobs finish within the grace period, then fails the rest with an error result. */
  private async drain(): Promise<void> {
    const { log, config } = this.options;
    if (this.running.size === 0) return;
    const graceMs = config.gracePeriodMs;
    log.info(`Waiting up to ${graceMs / 1000} s for ${this.running.size} job(s) to finish.`);
    const all = () => Promise.all([...this.running.values()].map((j) => j.finished));
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => {
      // A second stop that came before the drain began has ended the grace already.
      if (this.graceOver.signal.aborted) return resolve();
      timer = setTimeout(resolve, graceMs);
      this.endGrace = resolve;
    });
    await Promise.race([all(), graceOver]);
    clearTimeout(timer);
    // Result posts still retrying give up now; each job below gets one attempt at its shutdown error.
    this.graceOver.abort();
    if (this.running.size === 0) return;
    log.warn(`Grace period over: reporting ${this.running.size} unfinished job(s) as failed.`);
    for (const job of this.running.values()) {
      job.controller.abort(
        new WorkerShutdown(
          `Worker shut down before the job finished (grace period of ${graceMs / 1000} s ran out).`,
        ),
      );
    }
    await all();
  }
}
