// The job the current code runs for (so download() and upload() need no job argument) and its files folder.
import { AsyncLocalStorage } from "node:async_hooks";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FlashError } from "../flash-error.js";
import type { Logger } from "../log/index.js";
import type { RawJob } from "./types.js";

/** What helpers called from a handler may know about its job. */
export interface JobScope {
  readonly job: RawJob;
  readonly signal: AbortSignal;
  /** A folder for this job's files, made on first use and removed when the job ends. */
  folder(): Promise<string>;
}

// Kept on globalThis, as the registry is: the app's own copy of the package must see the runtime's job.
const KEY = Symbol.for("flash-worker.job-scope");
const RUNNING = Symbol.for("flash-worker.job-scope.running");
const holder = globalThis as { [KEY]?: AsyncLocalStorage<JobScope>; [RUNNING]?: { count: number } };
holder[KEY] ??= new AsyncLocalStorage<JobScope>();
const storage = holder[KEY];
/** How many runInJobScope calls have not ended yet, across every copy of the package in the process. */
holder[RUNNING] ??= { count: 0 };
const running = holder[RUNNING];
/**
 * Node before AsyncContextFrame (20, 22) tracks the store with async hooks on every promise and socket once it
 * is in use: between jobs the storage is disabled, so the worker's own take and done run without them.
 */
const toggles = typeof (storage as { _enable?: unknown })._enable === "function";

/**
 * The job whose handler (or anything it awaits) is running now; undefined outside a job. Code a handler left
 * running after its job ended may see that job, or (on Node 20 and 22, once no job is running) none.
 */
export function currentJob(): JobScope | undefined {
  return storage.getStore();
}

/** A job's scope used after the job ended (a handler still running after a stop asking for its folder). */
class JobEndedError extends FlashError {
  readonly code = "JOB_ENDED";
  override name = "JobEndedError";
}

/** Runs `work` as job `job`; whatever way it ends, the job's folder is removed afterwards. */
export async function runInJobScope<T>(
  job: RawJob,
  signal: AbortSignal,
  log: Logger,
  work: () => Promise<T>,
): Promise<T> {
  let made: Promise<string> | undefined;
  let ended = false;
  const scope: JobScope = {
    job,
    signal,
    folder() {
      // A handler still running after its job was stopped must not leave a folder behind.
      if (ended)
        return Promise.reject(new JobEndedError(`job ${job.id} has ended: its files folder is gone`));
      made ??= fsPromises().mkdtemp(
        join(tmpdir(), `flash-job-${job.id.replace(/[^\w-]/g, "_").slice(0, 64)}-`),
      );
      return made;
    },
  };
  running.count++;
  try {
    return await storage.run(scope, work); // run() enables the storage again if it was disabled
  } finally {
    ended = true;
    if (--running.count === 0 && toggles) storage.disable();
    if (made) {
      const folder = await made.catch(() => undefined);
      if (folder) {
        await fsPromises()
          .rm(folder, { recursive: true, force: true })
          .catch((err: Error) =>
            log.warn(`Could not remove the job's files folder ${folder}: ${err.message}`),
          );
      }
    }
  }
}

/** A job's log bindings: its id, and its batchId when the platform sent one (runpod-python 1.12 adds it to every line). */
export function jobLogBindings(raw: RawJob): { requestId: string; batchId?: string } {
  return typeof raw.batchId === "string"
    ? { requestId: raw.id, batchId: raw.batchId }
    : { requestId: raw.id };
}

/** node:fs/promises, loaded by the first job that asks for a folder rather than on every worker's start path. */
function fsPromises(): typeof import("node:fs/promises") {
  return process.getBuiltinModule("node:fs/promises");
}
