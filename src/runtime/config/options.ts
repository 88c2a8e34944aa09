// The worker's options: the flags and variables the runtime reads (runpod-python's names first), and nothing of
// the toolkit's or the local platform's, so their variables in a worker's environment never stop it.
import type { PlatformTransport } from "../../http/h1.js";
import { addSecret, type LogFormat, type LogLevel } from "../../log/index.js";
import {
  apiKey,
  ConfigError,
  decimal,
  type Env,
  httpUrl,
  integer,
  LOG_OPTIONS,
  logOutput,
  nonEmpty,
  type OptionTable,
  onOff,
  readOptions,
  seconds,
  text,
  toggle,
  type Values,
} from "../../options/index.js";

/** Everything the worker reads from flags and the environment, validated. */
export interface WorkerConfig {
  /** Handler file given on the command line (flash run/start). */
  file?: string;
  /** Raw JSON of --test_input / --test-input: forces the one-shot local test. */
  testInput?: string;
  /** --timeout: how long the one-shot test waits for its job (default: the execution timeout). */
  timeoutMs?: number;
  logLevel: LogLevel;
  /** JSON log lines, as on the platform (RUNPOD_ENDPOINT_ID is set and LOG_FORMAT is not). */
  logJson: boolean;
  /** LOG_FORMAT / --log-format; "json" writes pino's JSON records everywhere, on the platform too. */
  logFormat?: LogFormat;
  serveApi: boolean;
  /** --serve-api with its worker on the worker protocol over loopback, instead of in this process. */
  serveApiLoopback: boolean;
  apiHost: string;
  apiPort: number;
  /** --serve-api's platform key (--api-key, FLASH_API_KEY); generated when not given. */
  serveApiKey?: string;
  /** How long in-flight jobs may run after SIGTERM before they are reported as failed. */
  gracePeriodMs: number;
  /**
   * RUNPOD_INIT_TIMEOUT (seconds): start-up (import, fitness checks, warm-up, a model server's health wait) past
   * this is unhealthy and the worker exits. Unset, DEFAULT_INIT_TIMEOUT_MS bounds the start-up phases and a
   * declared server's own `startTimeout` (else the same 7 minutes) its health wait.
   */
  initTimeoutMs?: number;
  /** How long a computed result or stream chunk keeps being retried through transient failures (FLASH_DELIVERY_TIMEOUT). */
  deliveryTimeoutMs: number;
  /** Port of the load-balanced HTTP server. */
  port: number;
  /** PORT_HEALTH: where the platform polls the health check, when not `port` (serverless/load-balancing/overview). */
  healthPort?: number;
  /** HEALTH_CHECK_PATH: the path the platform polls, default `/ping` (serverless/load-balancing/overview). */
  healthPath: string;
  /** Address the load-balanced server binds (all interfaces in a container). */
  host: string;
  platform: ProtocolConfig;
  files: FilesConfig;
  fitness: FitnessConfig;
}

/** What download(), upload() and cachedModelPath() read: the size cap, the private-address switch, the volume, the bucket. */
export interface FilesConfig {
  /** RUNPOD_MAX_DOWNLOAD_BYTES; 5 GiB when unset, as runpod-python. */
  maxDownloadBytes: number;
  /** RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS: loopback, private and metadata addresses may be downloaded from. */
  allowPrivateDownloads: boolean;
  /** FLASH_VOLUME_PATH: where the network volume and the model cache are mounted; `/runpod-volume` on RunPod. */
  volumePath: string;
  bucket: {
    /** BUCKET_ENDPOINT_URL: the S3 endpoint, with the bucket as its last path segment or first host label. */
    endpointUrl?: string;
    accessKeyId?: string;
    secretAccessKey?: string;
  };
}

/** The startup fitness checks' settings (docs/protocol.md §10), runpod-python's names and defaults. */
export interface FitnessConfig {
  /** RUNPOD_SKIP_FITNESS_CHECKS: no check at all, built-in or registered. */
  skipAll: boolean;
  /** RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: no memory, disk, network or CUDA version check. */
  skipSystem: boolean;
  /** RUNPOD_SKIP_GPU_CHECK: no GPU allocation and compute check. */
  skipGpu: boolean;
  minMemoryGb: number;
  minDiskPercent: number;
  /** "major.minor". */
  minCudaVersion: string;
  networkTimeoutMs: number;
  /** Where the network check dials (runpod-python: 8.8.8.8:53). */
  networkHost: string;
  networkPort: number;
  gpuBenchmarkTimeoutMs: number;
  gpuTestTimeoutMs: number;
}

/** The platform's worker-side settings (docs/protocol.md §2): where to take jobs and post results. */
export interface ProtocolConfig {
  getJobUrl?: string;
  postOutputUrl: string;
  postStreamUrl: string;
  pingUrl?: string;
  pingIntervalMs: number;
  workerId: string;
  /** True when RUNPOD_POD_ID was set; pings need it (docs/protocol.md §3.7). */
  workerIdFromEnv: boolean;
  hostname: string;
  apiKey: string;
  endpointId?: string;
  /** FLASH_HTTP_TRANSPORT: the worker's calls to the platform over our HTTP/1.1 (h1, the default) or node:http. */
  transport?: PlatformTransport;
}

/** RunPod marks a worker whose cold start exceeds 7 minutes unhealthy (serverless/development/optimization). */
export const DEFAULT_INIT_TIMEOUT_MS = 420_000;

function version(raw: string, source: string): string {
  const match = /^\s*(\d+)(?:\.(\d+))?\s*$/.exec(raw);
  if (!match) throw new ConfigError(`Invalid version "${raw}" in ${source}: expected major.minor, e.g. 11.8`);
  return `${match[1]}.${match[2] ?? "0"}`;
}

function httpTransport(raw: string, source: string): PlatformTransport {
  const kind = raw.trim().toLowerCase();
  if (kind === "h1" || kind === "node") return kind;
  throw new ConfigError(`Invalid transport "${raw}" in ${source}: expected h1 or node`);
}

function urlPath(raw: string, source: string): string {
  const path = raw.trim();
  if (!path.startsWith("/") || /[\s?#]/.test(path))
    throw new ConfigError(`Invalid path "${raw}" in ${source}: expected a path such as /ping or /health`);
  return path;
}

/** The worker's command line and process settings (`flash start` and `flash run` show the ones with help). */
export const WORKER_OPTIONS = {
  ...LOG_OPTIONS,
  testInput: {
    flags: ["--test-input", "--test_input"],
    parse: text,
    value: "JSON",
    help: "run this one job and exit (alias --test_input; default test_input.json)",
  },
  timeout: {
    flags: ["--timeout"],
    parse: seconds(86_400),
    value: "SECONDS",
    help: "how long the job may run (default: the Endpoint's executionTimeoutMs, else 600)",
  },
  serveApi: toggle(
    ["--serve-api", "--rp_serve_api"],
    "the local platform in this process with this worker (alias --rp_serve_api)",
  ),
  serveApiLoopback: toggle(
    ["--serve-api-loopback"],
    "its worker on the worker protocol over loopback instead of in-process calls",
  ),
  apiHost: { flags: ["--api-host", "--rp_api_host"], parse: text, default: "localhost" },
  apiPort: {
    flags: ["--api-port", "--rp_api_port"],
    parse: integer(0, 65535),
    default: 8000,
    value: "PORT",
    help: "its port (alias --rp_api_port; default 8000)",
  },
  serveApiKey: { flags: ["--api-key"], env: ["FLASH_API_KEY"], parse: apiKey, secret: true },
  gracePeriod: {
    flags: ["--grace-period"],
    env: ["FLASH_GRACE_PERIOD"],
    parse: (raw: string, source: string) => integer(0, 86_400)(raw, `${source} (seconds)`) * 1000,
    default: 30_000,
  },
  deliveryTimeout: { env: ["FLASH_DELIVERY_TIMEOUT"], parse: seconds(86_400), default: 3_600_000 },
  httpTransport: { env: ["FLASH_HTTP_TRANSPORT"], parse: httpTransport, default: "h1" as PlatformTransport },
  initTimeout: { env: ["RUNPOD_INIT_TIMEOUT"], parse: seconds(86_400) },
  port: { flags: ["--port"], env: ["PORT"], parse: integer(0, 65535), default: 80 },
  healthPort: { env: ["PORT_HEALTH"], parse: integer(0, 65535) },
  healthPath: { env: ["HEALTH_CHECK_PATH"], parse: urlPath, default: "/ping" },
  host: { flags: ["--host"], env: ["FLASH_LB_HOST"], parse: text, default: "0.0.0.0" },
  skipFitnessChecks: { env: ["RUNPOD_SKIP_FITNESS_CHECKS"], parse: onOff, default: false },
  skipSystemChecks: { env: ["RUNPOD_SKIP_AUTO_SYSTEM_CHECKS"], parse: onOff, default: false },
  skipGpuCheck: { env: ["RUNPOD_SKIP_GPU_CHECK"], parse: onOff, default: false },
  minMemoryGb: { env: ["RUNPOD_MIN_MEMORY_GB"], parse: decimal(0, 1_000_000), default: 4 },
  minDiskPercent: { env: ["RUNPOD_MIN_DISK_PERCENT"], parse: decimal(0, 100), default: 10 },
  minCudaVersion: { env: ["RUNPOD_MIN_CUDA_VERSION"], parse: version, default: "11.8" },
  networkCheckTimeout: { env: ["RUNPOD_NETWORK_CHECK_TIMEOUT"], parse: seconds(600), default: 5000 },
  networkCheckHost: { env: ["RUNPOD_NETWORK_CHECK_HOST"], parse: text, default: "8.8.8.8" },
  networkCheckPort: { env: ["RUNPOD_NETWORK_CHECK_PORT"], parse: integer(1, 65535), default: 53 },
  gpuBenchmarkTimeout: { env: ["RUNPOD_GPU_BENCHMARK_TIMEOUT"], parse: seconds(600), default: 2000 },
  gpuTestTimeout: { env: ["RUNPOD_GPU_TEST_TIMEOUT"], parse: seconds(3600), default: 30_000 },
} as const satisfies OptionTable;

/** The protocol's own setting beside its addresses (the URLs are read as given, runpod-python's way). */
const PROTOCOL_OPTIONS = {
  pingInterval: { env: ["RUNPOD_PING_INTERVAL"], parse: integer(1, 3_600_000), default: 10_000 },
} as const satisfies OptionTable;

/** What the file helpers read when called (download(), upload() and cachedModelPath() run inside handlers). */
export const FILES_OPTIONS = {
  maxDownloadBytes: {
    env: ["RUNPOD_MAX_DOWNLOAD_BYTES"],
    parse: integer(1, Number.MAX_SAFE_INTEGER),
    default: 5 * 1024 ** 3,
  },
  allowPrivateDownloads: { env: ["RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS"], parse: onOff, default: false },
  // Network volumes and cached models mount here in Serverless workers (storage/network-volumes, model-caching).
  volumePath: { env: ["FLASH_VOLUME_PATH"], parse: nonEmpty, default: "/runpod-volume" },
  bucketEndpointUrl: { env: ["BUCKET_ENDPOINT_URL"], parse: httpUrl },
  bucketAccessKeyId: { env: ["BUCKET_ACCESS_KEY_ID"], parse: text, secret: true },
  bucketSecretAccessKey: { env: ["BUCKET_SECRET_ACCESS_KEY"], parse: text, secret: true },
} as const satisfies OptionTable;

/** The worker's options from its command line and environment; unknown flags stay for the handler. */
export function readWorkerConfig(
  argv: readonly string[],
  env: Env = process.env,
): { config: WorkerConfig; rest: string[] } {
  const { values: v, rest } = readOptions(WORKER_OPTIONS, argv, env);
  const log = logOutput(v, env);
  const config: WorkerConfig = {
    testInput: v.testInput,
    timeoutMs: v.timeout,
    logLevel: log.level,
    logJson: log.json,
    logFormat: log.format,
    serveApi: v.serveApi,
    serveApiLoopback: v.serveApiLoopback,
    apiHost: v.apiHost,
    apiPort: v.apiPort,
    serveApiKey: v.serveApiKey,
    gracePeriodMs: v.gracePeriod,
    deliveryTimeoutMs: v.deliveryTimeout,
    initTimeoutMs: v.initTimeout,
    port: v.port,
    healthPort: v.healthPort,
    healthPath: v.healthPath,
    host: v.host,
    platform: { ...readProtocolConfig(env), transport: v.httpTransport },
    files: readFilesConfig(env),
    fitness: fitnessConfig(v),
  };
  return { config, rest };
}

function fitnessConfig(v: Values<typeof WORKER_OPTIONS>): FitnessConfig {
  return {
    skipAll: v.skipFitnessChecks,
    skipSystem: v.skipSystemChecks,
    skipGpu: v.skipGpuCheck,
    minMemoryGb: v.minMemoryGb,
    minDiskPercent: v.minDiskPercent,
    minCudaVersion: v.minCudaVersion,
    networkTimeoutMs: v.networkCheckTimeout,
    networkHost: v.networkCheckHost,
    networkPort: v.networkCheckPort,
    gpuBenchmarkTimeoutMs: v.gpuBenchmarkTimeout,
    gpuTestTimeoutMs: v.gpuTestTimeout,
  };
}

/** The worker protocol's settings from the environment the platform gives a worker (docs/protocol.md §2). */
export function readProtocolConfig(env: Env): ProtocolConfig {
  const podId = env.RUNPOD_POD_ID;
  const { pingInterval } = readOptions(PROTOCOL_OPTIONS, [], env).values;
  const config: ProtocolConfig = {
    getJobUrl: env.RUNPOD_WEBHOOK_GET_JOB || undefined,
    postOutputUrl: env.RUNPOD_WEBHOOK_POST_OUTPUT || "JOB_DONE_URL",
    postStreamUrl: env.RUNPOD_WEBHOOK_POST_STREAM || "JOB_STREAM_URL",
    pingUrl: env.RUNPOD_WEBHOOK_PING || undefined,
    pingIntervalMs: pingInterval,
    workerId: podId || crypto.randomUUID(),
    workerIdFromEnv: Boolean(podId),
    hostname: env.RUNPOD_POD_HOSTNAME || "unknown",
    apiKey: env.RUNPOD_AI_API_KEY ?? "",
    endpointId: env.RUNPOD_ENDPOINT_ID || undefined,
  };
  // The key the worker sends is never logged (src/log/redact.ts).
  addSecret(config.apiKey);
  return config;
}

/** The file helpers' settings alone: download() and upload() read them when called. */
export function readFilesConfig(env: Env = process.env): FilesConfig {
  const { values: v } = readOptions(FILES_OPTIONS, [], env);
  return {
    maxDownloadBytes: v.maxDownloadBytes,
    allowPrivateDownloads: v.allowPrivateDownloads,
    volumePath: v.volumePath,
    bucket: {
      endpointUrl: v.bucketEndpointUrl,
      accessKeyId: v.bucketAccessKeyId,
      secretAccessKey: v.bucketSecretAccessKey,
    },
  };
}
