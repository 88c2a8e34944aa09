// The rest of an endpoint's life through REST v2: find it by name or id, delete it, list endpoints with their
// workers, read a worker's logs.

import { FlashError } from "../../flash-error.js";
import { readDeployments } from "../../project/deployments.js";
import { isApiError, type RestClient } from "../rest/client.js";
import { apiErrorSentence } from "../rest/errors.js";
import type { ListEndpointWorkersResponse, RestEndpoint, RestWorker, WorkerLogEvent } from "../rest/types.js";

/** A lifecycle command could not do what it was asked; the message says why. */
export class LifecycleError extends FlashError {
  readonly code = "LIFECYCLE_FAILED";
  override name = "LifecycleError";
}

/** Runs an API call, turning its error answer into a sentence about `what`. */
export async function withApi<T>(api: RestClient, what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (isApiError(err)) throw new LifecycleError(apiErrorSentence(err, what, api.url));
    throw err;
  }
}

/** The endpoint named `ref` (its name, or its id); a name two endpoints share is refused. */
export async function findEndpoint(api: RestClient, ref: string): Promise<RestEndpoint> {
  const all = await withApi(api, "the endpoint list", () => api.listEndpoints());
  const byId = all.find((e) => e.id === ref);
  if (byId) return byId;
  const named = all.filter((e) => e.name === ref);
  if (named.length === 1) return named[0]!;
  if (named.length > 1) {
    throw new LifecycleError(
      `${named.length} endpoints are named ${ref} (${named.map((e) => e.id).join(", ")}): name one by its id`,
    );
  }
  throw new LifecycleError(
    `No endpoint named ${ref} on ${api.url}${all.length ? ` (there: ${all.map((e) => e.name).join(", ")})` : " (it has none)"}`,
  );
}

/** The endpoints `flash undeploy` deletes: the named ones, or every one this app recorded (--all). */
export async function endpointsToDelete(
  api: RestClient,
  root: string,
  names: readonly string[],
  all: boolean,
): Promise<RestEndpoint[]> {
  if (all) {
    const recorded = readDeployments(root);
    if (!recorded || recorded.platform !== api.url || Object.keys(recorded.endpoints).length === 0) {
      throw new LifecycleError(
        `No endpoints of this app are recorded for ${api.url} in ${root}/.flash/deployments.json; name them: flash undeploy NAME...`,
      );
    }
    const existing = await withApi(api, "the endpoint list", () => api.listEndpoints());
    const ids = new Set(Object.values(recorded.endpoints).map((e) => e.id));
    return existing.filter((e) => ids.has(e.id));
  }
  if (names.length === 0)
    throw new LifecycleError("Name the endpoints to delete (flash undeploy NAME...), or pass --all");
  const found: RestEndpoint[] = [];
  for (const name of names) found.push(await findEndpoint(api, name));
  return found;
}

export interface EndpointWithWorkers {
  endpoint: RestEndpoint;
  workers: ListEndpointWorkersResponse;
  /** The last log lines of each unhealthy worker (dead, crash-looping or failing its checks), by id. */
  lastLines?: Record<string, string[]>;
}

/** Lines of an unhealthy worker `flash endpoints` shows under it. */
const UNHEALTHY_LINES = 5;

/** Every endpoint with its workers, and the last lines of the unhealthy ones. */
export async function listEndpointsWithWorkers(api: RestClient): Promise<EndpointWithWorkers[]> {
  const all = await withApi(api, "the endpoint list", () => api.listEndpoints());
  return Promise.all(
    all.map(async (endpoint) => {
      const workers = await withApi(api, `the workers of ${endpoint.name}`, () =>
        api.listWorkers(endpoint.id),
      );
      const lastLines: Record<string, string[]> = {};
      for (const worker of workers.workers.filter((w) => w.status === "UNHEALTHY")) {
        lastLines[worker.id] = await workerLastLines(api, endpoint.id, worker.id, UNHEALTHY_LINES);
      }
      return { endpoint, workers, lastLines };
    }),
  );
}

/** A worker's last `tail` lines; none when they cannot be read (they are shown beside, not instead of, the list). */
export async function workerLastLines(
  api: RestClient,
  endpointId: string,
  workerId: string,
  tail: number,
): Promise<string[]> {
  const lines: string[] = [];
  await api
    .workerLogs(endpointId, workerId, { tail, follow: false, onEvent: (e) => lines.push(e.line) })
    .catch(() => undefined);
  return lines.slice(-tail);
}

/** The endpoints as a table, each followed by its workers. */
export function formatEndpoints(list: readonly EndpointWithWorkers[]): string {
  if (list.length === 0) return "No endpoints.";
  const lines: string[] = [];
  for (const { endpoint, workers, lastLines } of list) {
    const compute = endpoint.cpu?.length
      ? `cpu ${endpoint.cpu.map((c) => `${c.id}x${c.vcpuCount}`).join(",")}`
      : `gpu ${endpoint.gpu?.pools?.join(",") ?? "-"}`;
    const s = workers.summary;
    lines.push(
      `${endpoint.name}  ${endpoint.id}  ${endpoint.type ?? "QUEUE"}  ${compute}  workers ${endpoint.workers.min}-${endpoint.workers.max}  ${endpoint.image ?? "(no image)"}`,
      `  ${s.total} worker(s): ${s.running} running, ${s.idle} idle, ${s.initializing} initializing, ${s.unhealthy} unhealthy`,
    );
    for (const worker of workers.workers) {
      lines.push(
        `    ${worker.id}  ${worker.status}${worker.isStale ? " (stale)" : ""}${worker.uptimeSeconds != null ? `  up ${worker.uptimeSeconds}s` : ""}`,
      );
      for (const line of lastLines?.[worker.id] ?? []) lines.push(`      | ${line}`);
    }
  }
  return lines.join("\n");
}

/** How often `flash logs --follow` looks for workers started since it began. */
const FOLLOW_LIST_MS = 2_000;

/**
 * A worker's log lines (or every worker's, dead ones included, prefixed by its id); with `follow`, until
 * `signal` aborts, joining workers as they start (a crash-looping endpoint starts one after another).
 */
export async function workerLogs(
  api: RestClient,
  ref: string,
  options: {
    workerId?: string;
    follow: boolean;
    signal: AbortSignal;
    write(line: string): void;
    /** A remark about a worker (it is unhealthy), apart from the log lines. */
    note?(line: string): void;
  },
): Promise<void> {
  const endpoint = await findEndpoint(api, ref);
  const noteUnhealthy = (workers: readonly RestWorker[]) => {
    for (const w of workers.filter((w) => w.status === "UNHEALTHY")) {
      options.note?.(
        `! worker ${w.id} of ${endpoint.name} is UNHEALTHY (it exited, crash-loops or fails its checks)`,
      );
    }
  };
  const list = () => withApi(api, `the workers of ${endpoint.name}`, () => api.listWorkers(endpoint.id));
  let ids: string[];
  if (options.workerId) ids = [options.workerId];
  else {
    const { workers } = await list();
    noteUnhealthy(workers);
    ids = workers.map((w) => w.id);
    if (ids.length === 0 && !options.follow) {
      throw new LifecycleError(
        `Endpoint ${endpoint.name} (${endpoint.id}) has no workers now: nothing to show (--follow waits for one)`,
      );
    }
  }
  const prefix = ids.length > 1 || (!options.workerId && options.follow);
  const read = (workerId: string) =>
    withApi(api, `the logs of worker ${workerId} of ${endpoint.name}`, () =>
      api.workerLogs(endpoint.id, workerId, {
        follow: options.follow,
        signal: options.signal,
        onEvent: (event: WorkerLogEvent) => options.write(`${prefix ? `${workerId} | ` : ""}${event.line}`),
      }),
    );
  const reading = ids.map(read);
  if (options.follow && !options.workerId) {
    const seen = new Set(ids);
    while (!options.signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FOLLOW_LIST_MS);
        options.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
      if (options.signal.aborted) break;
      const { workers } = await list();
      noteUnhealthy(workers.filter((w) => !seen.has(w.id)));
      for (const worker of workers) {
        if (seen.has(worker.id)) continue;
        seen.add(worker.id);
        reading.push(read(worker.id).catch(() => undefined));
      }
    }
  }
  await Promise.all(reading);
}
