// RunPod REST API v2 bodies as the deploy client sends and reads them (test/fixtures/runpod-rest-v2.openapi.json).

export type EndpointType = "QUEUE" | "LOAD_BALANCER";
export type FlashBoot = "OFF" | "FLASHBOOT" | "PRIORITY_FLASHBOOT";

export type EndpointScaling =
  | { type: "QUEUE_DELAY"; queueDelay: number }
  | { type: "REQUEST_COUNT"; requestCount: number };

export interface EndpointWorkers {
  min?: number;
  max?: number;
  /** Seconds. */
  idleTimeout?: number;
}

export interface CreateEndpointGpu {
  pools: string[];
  excludedTypes?: string[];
  count?: number;
  minCudaVersion?: string;
  allowedCudaVersions?: string[];
}

export interface CreateCpu {
  id: string;
  vcpuCount: number;
}

/** `CreateEndpointRequest` (unevaluatedProperties: false: nothing else may be sent). */
export interface CreateEndpointRequest {
  name: string;
  type: EndpointType;
  image: string;
  args?: string;
  disk?: number;
  env?: Record<string, string>;
  ports?: string[];
  registry?: string | null;
  gpu?: CreateEndpointGpu;
  cpu?: CreateCpu[];
  workers?: EndpointWorkers;
  scaling: EndpointScaling;
  /** Execution timeout per request, ms. */
  timeout?: number;
  flashboot?: FlashBoot;
  networkVolumes?: string[];
  dataCenterIds?: string[];
}

/** `UpdateEndpointRequest`: only the fields sent change; the type cannot. */
export type UpdateEndpointRequest = Partial<Omit<CreateEndpointRequest, "type" | "gpu">> & {
  gpu?: Partial<CreateEndpointGpu>;
};

export type EndpointRequestUrls =
  | {
      run: string;
      runSync: string;
      status: string;
      stream: string;
      cancel: string;
      retry: string;
      purgeQueue: string;
      health: string;
    }
  | { base: string; health: string };

/** `Endpoint` as the API returns it. */
export interface RestEndpoint {
  id: string;
  name: string;
  type?: EndpointType;
  requestUrls?: EndpointRequestUrls;
  image?: string;
  args?: string;
  env?: Record<string, string>;
  registry?: string | null;
  gpu?: (CreateEndpointGpu & { minCudaVersion: string | null; allowedCudaVersions: string[] }) | null;
  cpu?: (CreateCpu & { memory: number })[];
  workers: EndpointWorkers & { min: number; max: number };
  scaling: EndpointScaling;
  dataCenterIds: string[];
  networkVolumes: string[];
  timeout: number;
  flashboot: FlashBoot;
  createdAt: string;
}

export type WorkerStatus = "RUNNING" | "IDLE" | "INITIALIZING" | "THROTTLED" | "UNHEALTHY";

export interface RestWorker {
  id: string;
  status: WorkerStatus;
  isStale: boolean;
  gpuCount: number;
  version?: number | null;
  image?: string | null;
  uptimeSeconds?: number | null;
  startedAt?: string | null;
}

export interface ListEndpointWorkersResponse {
  workers: RestWorker[];
  summary: Record<"running" | "idle" | "initializing" | "throttled" | "unhealthy" | "total", number>;
  endpointVersion?: number | null;
}

export interface Registry {
  id: string;
  name: string;
}

export interface GpuCatalogType {
  id: string;
  name: string;
  /** Serverless pool; null when the card is in none. */
  pool: string | null;
  /** USD per GPU-hour; `serverless` only for a card in a serverless pool. */
  price?: { secure?: number; community?: number; serverless?: number };
}

/** One SSE `data:` payload of the worker logs stream. */
export interface WorkerLogEvent {
  ts: string;
  source: "container" | "system";
  line: string;
}

/** `ErrorResponse` (application/problem+json). */
export interface ProblemBody {
  title: string;
  status: number;
  detail: string;
  errors?: string[];
}

/** `CreatePodRequest` (unevaluatedProperties: false): one of gpu or cpu. */
export interface CreatePodRequest {
  name: string;
  image: string;
  args?: string;
  env?: Record<string, string>;
  /** `8000/http` through the proxy, `22/tcp` forwarded to a public port. */
  ports?: string[];
  registry?: string | null;
  gpu?: { id: string; count: number };
  cpu?: CreateCpu;
}

/** `UpdatePodRequest`: the container's settings (its compute cannot change). */
export type UpdatePodRequest = Partial<Omit<CreatePodRequest, "gpu" | "cpu">>;

export type PodStatus = "PROVISIONING" | "STARTING" | "RUNNING" | "EXITED" | "ERROR" | "TERMINATED";

/** `PodRuntimePort`: a tcp port's public `ip:public`, an http port's proxy. */
export interface PodRuntimePort {
  private: number;
  public: number | null;
  type: string;
  ip: string | null;
}

/** `Pod` as the API returns it (the fields the toolkit reads). */
export interface RestPod {
  id: string;
  name: string;
  status: PodStatus;
  image: string;
  args: string;
  env: Record<string, string>;
  ports: string[];
  registry: string | null;
  gpu?: { id: string; count: number };
  cpu?: CreateCpu & { memory: number };
  /** Dollars per hour. */
  cost: number;
  runtime: { uptime?: number; ports?: PodRuntimePort[] } | null;
  createdAt: string;
}
