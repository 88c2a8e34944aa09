// What a bench's load would cost on serverless GPUs: the catalog's serverless list price per GPU-hour (REST v2
// GET /v2/catalog/gpus → price.serverless) × GPUs per worker × the worker-seconds the run kept workers alive.
// Serverless bills a worker per second from its start to its stop, busy or idle; so the worker-seconds are the
// measured execution seconds plus the idle (and starting) seconds the scaling kept alive.

/** A GpuType of GET /v2/catalog/gpus, the fields a price needs. */
export interface CatalogPrice {
  id: string;
  name: string;
  pool: string | null;
  price: { serverless?: number };
}

export interface WorkerTime {
  /** Seconds worker processes ran, start to stop (exact on the local platform, sampled elsewhere). */
  workerSeconds: number;
  /** Seconds jobs executed (the platform's executionTime), of every job that ran. */
  executionSeconds: number;
  /** Requests that completed: the cost is spread over them. */
  completed: number;
}

export interface GpuCost {
  gpu: string;
  pool: string | null;
  /** USD per GPU-hour, serverless list price. */
  pricePerHour: number;
  gpuCount: number;
  /** USD for the whole run. */
  total: number;
  /** Of which execution (busy) and the rest (starting and idle). */
  execution: number;
  idle: number;
  /** USD per 1,000 completed requests; null when none completed. */
  per1000: number | null;
}

/** Cards a name picks: a catalog id ("NVIDIA GeForce RTX 4090"), short name ("RTX 4090") or pool ("ADA_24"). */
export function pickGpus(catalog: readonly CatalogPrice[], wanted: readonly string[]): CatalogPrice[] {
  const picked: CatalogPrice[] = [];
  for (const name of wanted) {
    const lower = name.toLowerCase();
    const matches = catalog.filter(
      (g) =>
        g.id.toLowerCase() === lower || g.name.toLowerCase() === lower || g.pool?.toLowerCase() === lower,
    );
    for (const gpu of matches) if (!picked.includes(gpu)) picked.push(gpu);
  }
  return picked;
}

/** The cost of the run on one GPU type; null when the catalog gives it no serverless price. */
export function gpuCost(gpu: CatalogPrice, gpuCount: number, time: WorkerTime): GpuCost | null {
  const price = gpu.price.serverless;
  if (price === undefined) return null;
  const perSecond = (price * gpuCount) / 3600;
  // Execution above the worker-seconds (a worker running jobs concurrently) is already inside them.
  const busy = Math.min(time.executionSeconds, time.workerSeconds);
  const total = perSecond * time.workerSeconds;
  return {
    gpu: gpu.id,
    pool: gpu.pool,
    pricePerHour: price,
    gpuCount,
    total,
    execution: perSecond * busy,
    idle: perSecond * (time.workerSeconds - busy),
    per1000: time.completed > 0 ? (total / time.completed) * 1000 : null,
  };
}
