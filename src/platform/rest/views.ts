// REST v2 answers for serverless endpoints: the Endpoint record with its request URLs, its workers and releases.
import type { StoredEndpoint } from "../state/rest-endpoints.js";
import type { HostWorker, WorkerStatus } from "../state/rest-workers.js";

/** The Endpoint schema: the record, its workers block as its scaling allows, and where to call it. */
export function endpointView(stored: StoredEndpoint, baseUrl: string) {
  const { record } = stored;
  const base = `${baseUrl}/v2/${record.id}`;
  const lbBase = `${baseUrl}/lb/${record.id}`;
  const { workers, gpu, ...rest } = record;
  const omitIdle = record.type === "QUEUE" && record.scaling.type === "REQUEST_COUNT";
  return {
    ...rest,
    // A CPU endpoint has no gpu block at all.
    ...(record.cpu ? {} : { gpu }),
    workers: omitIdle ? { min: workers.min, max: workers.max } : workers,
    requestUrls:
      record.type === "QUEUE"
        ? {
            run: `${base}/run`,
            runSync: `${base}/runsync`,
            status: `${base}/status/{job_id}`,
            stream: `${base}/stream/{job_id}`,
            cancel: `${base}/cancel/{job_id}`,
            retry: `${base}/retry/{job_id}`,
            purgeQueue: `${base}/purge-queue`,
            health: `${base}/health`,
          }
        : { base: lbBase, health: `${lbBase}/ping` },
  };
}

/** ListEndpointWorkersResponse. */
export function workersView(stored: StoredEndpoint, hostWorkers: HostWorker[]) {
  const { record, releases } = stored;
  const workers = hostWorkers.map((w) => ({
    id: w.id,
    status: w.status,
    isStale: releases.isStale(w.startedAt),
    version: releases.versionAt(w.startedAt),
    gpuCount: record.gpu ? record.gpu.count : 0,
    image: record.image,
    uptimeSeconds: Math.max(0, Math.floor(((w.exitedAt ?? Date.now()) - w.startedAt) / 1000)),
    startedAt: new Date(w.startedAt).toISOString(),
  }));
  const count = (status: WorkerStatus) => workers.filter((w) => w.status === status).length;
  return {
    workers,
    summary: {
      running: count("RUNNING"),
      idle: count("IDLE"),
      initializing: count("INITIALIZING"),
      throttled: count("THROTTLED"),
      unhealthy: count("UNHEALTHY"),
      total: workers.length,
    },
    endpointVersion: releases.version,
  };
}

/** ListEndpointReleasesResponse. */
export function releasesView(stored: StoredEndpoint, hostWorkers: HostWorker[]) {
  const { releases } = stored;
  const rollout = releases.rollout(hostWorkers.map((w) => w.startedAt));
  return {
    endpointVersion: releases.version,
    rollout,
    releases: releases.list.map((r) => ({
      id: r.id,
      version: r.version,
      source: "MANUAL",
      buildId: null,
      createdByUserId: null,
      workerCount: r.version === releases.version ? rollout.workersOnLatest : 0,
      createdAt: r.createdAt,
      diff: r.diff,
    })),
  };
}
