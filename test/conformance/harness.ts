import { defineHandler, type HandlerOptions } from "../../src/job/definition.js";
import type { HandlerFn } from "../../src/job/types.js";
import { createLogger } from "../../src/log/index.js";
import { readWorkerConfig } from "../../src/runtime/config/options.js";
import { type ClientOptions, HttpPlatformClient } from "../../src/runtime/queue/http-client.js";
import { QueueWorker } from "../../src/runtime/queue/worker.js";
import type { Recorded, RecordingPlatform } from "./recording-platform.js";

/** Fast progress retries so tests of the retry path take milliseconds; the shipped policy is PROGRESS_RETRY. */
export const TEST_RETRY = { attempts: 3, baseMs: 5, maxMs: 10 };
/** Result and stream posts as DELIVERY_RETRY (no count; bounded by the worker), with millisecond waits. */
export const TEST_DELIVERY = { attempts: Number.POSITIVE_INFINITY, baseMs: 5, maxMs: 20 };

export interface RunningWorker {
  worker: QueueWorker;
  finished: Promise<void>;
  lines: string[];
  stop(): Promise<void>;
}

/** Runs a queue worker in this process against the recording platform. */
export function startWorker(
  platform: RecordingPlatform,
  fn: HandlerFn,
  options: HandlerOptions = {},
  env: Record<string, string> = {},
  clientOptions: Partial<ClientOptions> = {},
): RunningWorker {
  const { config } = readWorkerConfig([], { ...platform.env(), LOG_LEVEL: "DEBUG", ...env });
  const lines: string[] = [];
  const log = createLogger({
    level: "DEBUG",
    json: false,
    destination: { write: (l: string) => lines.push(l) },
  });
  const client = new HttpPlatformClient({
    platform: config.platform,
    log,
    retry: TEST_DELIVERY,
    progressRetry: TEST_RETRY,
    ...clientOptions,
  });
  const worker = new QueueWorker({ definition: defineHandler(fn, options), config, client, log });
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

/** A promise with its resolve function, for handlers the test releases. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Whether the job's result (not an IN_PROGRESS progress post) has been posted: a `platform.waitFor` predicate. */
export const doneFor = (id: string) => (requests: Recorded[]) =>
  requests.some((r) => r.route === "done" && r.url.includes(`/${id}?`) && !r.body.includes("IN_PROGRESS"));
