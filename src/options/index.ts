// The one config parser: every flag and environment variable the runtime and `flash` read, validated.
import { FlashError } from "../errors.js";
import { addSecret, type LogFormat, type LogLevel } from "../log/index.js";

/** The one error type for bad flags and environment variables; the message names the source. */
export class ConfigError extends FlashError {
  readonly code = "CONFIG_INVALID";
  override name = "ConfigError";
}

/** Everything the runtime reads from flags and the environment, validated. */
export interface Config {
  /** Handler file given on the command line (flash run/start/dev). */
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
  /** The local platform's API key (flash dev/serve --api-key); generated when not given. */
  localApiKey?: string;
  /** Worker processes flash dev keeps for its endpoint: [min, max] (--workers min,max). */
  localWorkers?: [number, number];
  /** Node.js version flash build/deploy build for (--node-version). */
  nodeVersion?: string;
  /** Base URL of the REST v2 API flash deploy/undeploy/endpoints/logs/login call (--api-url, RUNPOD_API_URL). */
  apiUrl?: string;
  /** The image flash deploy builds and pushes: REGISTRY/NAME:TAG (--image). */
  image?: string;
  /** The image the generated Dockerfile builds FROM, instead of the runtime's own (--base-image). */
  baseImage?: string;
  /** Check the registry's TLS certificate on push and pull (--tls-verify=false for a registry on loopback). */
  tlsVerify?: boolean;
  /** Create or reuse a registry credential on the platform for a private image (--registry-auth). */
  registryAuth: boolean;
  /** Answer yes to confirmations (--yes). */
  yes: boolean;
  /** Every recorded endpoint (flash undeploy --all). */
  all: boolean;
  /** One worker's logs (flash logs --worker ID). */
  workerId?: string;
  /** Keep following new lines (flash logs --follow). */
  follow: boolean;
  /** flash login saves the key without checking it against the API (--no-verify). */
  noVerify: boolean;
  /** flash deploy returns once the endpoints are changed, without following the release (--no-wait). */
  noWait: boolean;
  /** How long flash deploy follows the new release, ms (--wait-timeout SECONDS; default 600 s). */
  waitTimeoutMs?: number;
  /** flash deploy sends no smoke request from test_input.json (--no-test). */
  noTest: boolean;
  /** Container tool for image builds and deployed workers: buildah, podman or docker (FLASH_CONTAINER_TOOL). */
  containerTool?: "buildah" | "podman" | "docker";
  /** buildah/podman storage folder (vfs) instead of the machine's default storage (FLASH_CONTAINER_STORAGE). */
  containerStorage?: string;
  /** Node base the runtime image is built on when it must be built here (FLASH_NODE_BASE_IMAGE). */
  nodeBaseImage?: string;
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
  platform: PlatformConfig;
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

/** The platform's worker-side settings (docs/protocol.md §2). */
export interface PlatformConfig {
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
}

type Env = Record<string, string | undefined>;

/** RunPod marks a worker whose cold start exceeds 7 minutes unhealthy (serverless/development/optimization). */
export const DEFAULT_INIT_TIMEOUT_MS = 420_000;

interface Option<T> {
  /** Flag spellings, runpod-python's first; each is accepted as --flag value and --flag=value. */
  flags: readonly string[];
  /** Environment variables read in order when no flag is given. */
  env: readonly string[];
  /** Boolean flags take no value. */
  boolean?: boolean;
  parse(raw: string, source: string): T;
}

const LEVELS: Record<string, LogLevel> = {
  NOTSET: "SILENT",
  SILENT: "SILENT",
  TRACE: "TRACE",
  DEBUG: "DEBUG",
  INFO: "INFO",
  WARN: "WARN",
  WARNING: "WARN",
  ERROR: "ERROR",
};

function parseLevel(raw: string, source: string): LogLevel {
  const level = LEVELS[raw.trim().toUpperCase()];
  if (!level) {
    throw new ConfigError(
      `Invalid log level "${raw}" in ${source}: expected one of DEBUG, INFO, WARNING (or WARN), ERROR, TRACE, NOTSET`,
    );
  }
  return level;
}

function parseFormat(raw: string, source: string): LogFormat {
  const format = raw.trim().toLowerCase();
  if (format === "text" || format === "json") return format;
  throw new ConfigError(`Invalid log format "${raw}" in ${source}: expected text or json`);
}

function integer(min: number, max: number) {
  return (raw: string, source: string): number => {
    const value = Number(raw);
    if (!/^\s*-?\d+\s*$/.test(raw) || value < min || value > max) {
      throw new ConfigError(
        `Invalid value "${raw}" in ${source}: expected a whole number from ${min} to ${max}`,
      );
    }
    return value;
  };
}

const text = (raw: string): string => raw;

function apiKey(raw: string, source: string): string {
  if (!/^[\x21-\x7e]+$/.test(raw)) {
    throw new ConfigError(`Invalid API key in ${source}: expected printable characters without spaces`);
  }
  return raw;
}

/** "min,max", or "n" for [0, n]: what `workers: n` means on an Endpoint. */
function workerRange(raw: string, source: string): [number, number] {
  const match = /^\s*(\d+)\s*(?:,\s*(\d+)\s*)?$/.exec(raw);
  const min = match?.[2] === undefined ? 0 : Number(match?.[1]);
  const max = Number(match?.[2] ?? match?.[1]);
  if (!match || min > max || max < 1 || max > 64) {
    throw new ConfigError(
      `Invalid workers "${raw}" in ${source}: expected "min,max" with 0 <= min <= max, 1 <= max <= 64`,
    );
  }
  return [min, max];
}
/** An http(s) base URL, without a trailing slash. */
function httpUrl(raw: string, source: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new ConfigError(`Invalid URL "${raw}" in ${source}: expected http://host:port or https://host`);
  }
  return raw.replace(/\/+$/, "");
}
const flag = (): boolean => true;

/** The spellings runpod-python accepts for a switch, and their opposites. */
function onOff(raw: string, source: string): boolean {
  const value = raw.trim().toLowerCase();
  if (["1", "true", "yes", "on"].includes(value)) return true;
  if (["0", "false", "no", "off"].includes(value)) return false;
  throw new ConfigError(`Invalid value "${raw}" in ${source}: expected true or false (or 1/0, yes/no)`);
}

function decimal(min: number, max: number) {
  return (raw: string, source: string): number => {
    const value = Number(raw);
    if (!/^\s*\d+(\.\d+)?\s*$/.test(raw) || value < min || value > max) {
      throw new ConfigError(`Invalid value "${raw}" in ${source}: expected a number from ${min} to ${max}`);
    }
    return value;
  };
}

/** Seconds, as runpod-python reads them, kept in ms. */
function seconds(max: number) {
  return (raw: string, source: string): number => {
    const value = decimal(0, max)(raw, `${source} (seconds)`);
    if (value === 0)
      throw new ConfigError(`Invalid value "${raw}" in ${source}: expected more than 0 seconds`);
    return value * 1000;
  };
}

function version(raw: string, source: string): string {
  const match = /^\s*(\d+)(?:\.(\d+))?\s*$/.exec(raw);
  if (!match) throw new ConfigError(`Invalid version "${raw}" in ${source}: expected major.minor, e.g. 11.8`);
  return `${match[1]}.${match[2] ?? "0"}`;
}

function containerTool(raw: string, source: string): "buildah" | "podman" | "docker" {
  if (raw === "buildah" || raw === "podman" || raw === "docker") return raw;
  throw new ConfigError(`Invalid container tool "${raw}" in ${source}: expected buildah, podman or docker`);
}

function urlPath(raw: string, source: string): string {
  const path = raw.trim();
  if (!path.startsWith("/") || /[\s?#]/.test(path))
    throw new ConfigError(`Invalid path "${raw}" in ${source}: expected a path such as /ping or /health`);
  return path;
}

function nonEmpty(raw: string, source: string): string {
  if (raw.trim() === "") throw new ConfigError(`Empty value in ${source}`);
  return raw.trim();
}

export const OPTIONS = {
  testInput: { flags: ["--test_input", "--test-input"], env: [], parse: text },
  timeout: { flags: ["--timeout"], env: [], parse: seconds(86_400) },
  logLevel: {
    flags: ["--rp_log_level", "--log-level"],
    env: ["LOG_LEVEL", "RUNPOD_LOG_LEVEL", "RUNPOD_DEBUG_LEVEL"],
    parse: parseLevel,
  },
  logFormat: { flags: ["--log-format"], env: ["LOG_FORMAT"], parse: parseFormat },
  serveApi: { flags: ["--rp_serve_api", "--serve-api"], env: [], boolean: true, parse: flag },
  serveApiLoopback: { flags: ["--serve-api-loopback"], env: [], boolean: true, parse: flag },
  apiHost: { flags: ["--rp_api_host", "--api-host"], env: [], parse: text },
  apiPort: { flags: ["--rp_api_port", "--api-port"], env: [], parse: integer(0, 65535) },
  localApiKey: { flags: ["--api-key"], env: ["FLASH_API_KEY"], parse: apiKey },
  localWorkers: { flags: ["--workers"], env: ["FLASH_WORKERS"], parse: workerRange },
  nodeVersion: { flags: ["--node-version"], env: ["FLASH_NODE_VERSION"], parse: text },
  apiUrl: { flags: ["--api-url"], env: ["RUNPOD_API_URL"], parse: httpUrl },
  image: { flags: ["--image"], env: [], parse: nonEmpty },
  baseImage: { flags: ["--base-image"], env: [], parse: nonEmpty },
  tlsVerify: { flags: ["--tls-verify"], env: [], boolean: true, parse: onOff },
  registryAuth: { flags: ["--registry-auth"], env: [], boolean: true, parse: flag },
  yes: { flags: ["--yes", "-y"], env: [], boolean: true, parse: flag },
  all: { flags: ["--all"], env: [], boolean: true, parse: flag },
  workerId: { flags: ["--worker"], env: [], parse: nonEmpty },
  follow: { flags: ["--follow", "-f"], env: [], boolean: true, parse: flag },
  noVerify: { flags: ["--no-verify"], env: [], boolean: true, parse: flag },
  noWait: { flags: ["--no-wait"], env: [], boolean: true, parse: flag },
  waitTimeout: { flags: ["--wait-timeout"], env: [], parse: seconds(86_400) },
  noTest: { flags: ["--no-test"], env: [], boolean: true, parse: flag },
  containerTool: { flags: ["--container-tool"], env: ["FLASH_CONTAINER_TOOL"], parse: containerTool },
  containerStorage: { flags: [], env: ["FLASH_CONTAINER_STORAGE"], parse: nonEmpty },
  nodeBaseImage: { flags: [], env: ["FLASH_NODE_BASE_IMAGE"], parse: nonEmpty },
  gracePeriod: {
    flags: ["--grace-period"],
    env: ["FLASH_GRACE_PERIOD"],
    parse: (raw: string, source: string) => integer(0, 86_400)(raw, `${source} (seconds)`) * 1000,
  },
  deliveryTimeout: { flags: [], env: ["FLASH_DELIVERY_TIMEOUT"], parse: seconds(86_400) },
  initTimeout: { flags: [], env: ["RUNPOD_INIT_TIMEOUT"], parse: seconds(86_400) },
  port: { flags: ["--port"], env: ["PORT"], parse: integer(0, 65535) },
  healthPort: { flags: [], env: ["PORT_HEALTH"], parse: integer(0, 65535) },
  healthPath: { flags: [], env: ["HEALTH_CHECK_PATH"], parse: urlPath },
  host: { flags: ["--host"], env: ["FLASH_LB_HOST"], parse: text },
  pingInterval: { flags: [], env: ["RUNPOD_PING_INTERVAL"], parse: integer(1, 3_600_000) },
  maxDownloadBytes: {
    flags: [],
    env: ["RUNPOD_MAX_DOWNLOAD_BYTES"],
    parse: integer(1, Number.MAX_SAFE_INTEGER),
  },
  allowPrivateDownloads: { flags: [], env: ["RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS"], parse: onOff },
  volumePath: { flags: [], env: ["FLASH_VOLUME_PATH"], parse: nonEmpty },
  bucketEndpointUrl: { flags: [], env: ["BUCKET_ENDPOINT_URL"], parse: httpUrl },
  bucketAccessKeyId: { flags: [], env: ["BUCKET_ACCESS_KEY_ID"], parse: text },
  bucketSecretAccessKey: { flags: [], env: ["BUCKET_SECRET_ACCESS_KEY"], parse: text },
  skipFitnessChecks: { flags: [], env: ["RUNPOD_SKIP_FITNESS_CHECKS"], parse: onOff },
  skipSystemChecks: { flags: [], env: ["RUNPOD_SKIP_AUTO_SYSTEM_CHECKS"], parse: onOff },
  skipGpuCheck: { flags: [], env: ["RUNPOD_SKIP_GPU_CHECK"], parse: onOff },
  minMemoryGb: { flags: [], env: ["RUNPOD_MIN_MEMORY_GB"], parse: decimal(0, 1_000_000) },
  minDiskPercent: { flags: [], env: ["RUNPOD_MIN_DISK_PERCENT"], parse: decimal(0, 100) },
  minCudaVersion: { flags: [], env: ["RUNPOD_MIN_CUDA_VERSION"], parse: version },
  networkCheckTimeout: { flags: [], env: ["RUNPOD_NETWORK_CHECK_TIMEOUT"], parse: seconds(600) },
  networkCheckHost: { flags: [], env: ["RUNPOD_NETWORK_CHECK_HOST"], parse: text },
  networkCheckPort: { flags: [], env: ["RUNPOD_NETWORK_CHECK_PORT"], parse: integer(1, 65535) },
  gpuBenchmarkTimeout: { flags: [], env: ["RUNPOD_GPU_BENCHMARK_TIMEOUT"], parse: seconds(600) },
  gpuTestTimeout: { flags: [], env: ["RUNPOD_GPU_TEST_TIMEOUT"], parse: seconds(3600) },
} satisfies Record<string, Option<unknown>>;

type OptionName = keyof typeof OPTIONS;
type Parsed = { [K in OptionName]?: ReturnType<(typeof OPTIONS)[K]["parse"]> };

const BY_FLAG = new Map<string, OptionName>();
for (const [name, option] of Object.entries(OPTIONS) as [OptionName, Option<unknown>][]) {
  for (const f of option.flags) BY_FLAG.set(f, name);
}

export interface ParsedArgs {
  config: Config;
  /** Positional arguments and flags this parser does not know, left for the user (parse_known_args). */
  rest: string[];
}

/** Reads flags, then env vars, then defaults: one precedence rule for every option. */
export function parseConfig(argv: readonly string[], env: Env = process.env): ParsedArgs {
  const fromFlags: Parsed = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf("=");
    const name = BY_FLAG.get(eq > 0 ? arg.slice(0, eq) : arg);
    if (!name) {
      rest.push(arg);
      continue;
    }
    const option: Option<unknown> = OPTIONS[name];
    let raw: string;
    if (eq > 0) raw = arg.slice(eq + 1);
    else if (option.boolean) raw = "true";
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError(`Flag ${arg} needs a value`);
      raw = next;
      i++;
    }
    (fromFlags as Record<string, unknown>)[name] = option.parse(
      raw,
      `flag ${eq > 0 ? arg.slice(0, eq) : arg}`,
    );
  }

  const pick = <K extends OptionName>(name: K): Parsed[K] => pickOption(name, fromFlags, env);

  const podId = env.RUNPOD_POD_ID;
  const logFormat = pick("logFormat");
  const config: Config = {
    testInput: pick("testInput"),
    timeoutMs: pick("timeout"),
    logLevel: pick("logLevel") ?? "INFO",
    // An explicit LOG_FORMAT wins over the platform's JSON lines (json's records carry their keys too).
    logJson: Boolean(env.RUNPOD_ENDPOINT_ID) && logFormat === undefined,
    logFormat,
    serveApi: pick("serveApi") ?? false,
    serveApiLoopback: pick("serveApiLoopback") ?? false,
    apiHost: pick("apiHost") ?? "localhost",
    apiPort: pick("apiPort") ?? 8000,
    localApiKey: pick("localApiKey"),
    localWorkers: pick("localWorkers"),
    nodeVersion: pick("nodeVersion"),
    apiUrl: pick("apiUrl"),
    image: pick("image"),
    baseImage: pick("baseImage"),
    tlsVerify: pick("tlsVerify"),
    registryAuth: pick("registryAuth") ?? false,
    yes: pick("yes") ?? false,
    all: pick("all") ?? false,
    workerId: pick("workerId"),
    follow: pick("follow") ?? false,
    noVerify: pick("noVerify") ?? false,
    noWait: pick("noWait") ?? false,
    waitTimeoutMs: pick("waitTimeout"),
    noTest: pick("noTest") ?? false,
    containerTool: pick("containerTool"),
    containerStorage: pick("containerStorage"),
    nodeBaseImage: pick("nodeBaseImage"),
    gracePeriodMs: pick("gracePeriod") ?? 30_000,
    deliveryTimeoutMs: pick("deliveryTimeout") ?? 3_600_000,
    initTimeoutMs: pick("initTimeout"),
    port: pick("port") ?? 80,
    healthPort: pick("healthPort"),
    healthPath: pick("healthPath") ?? "/ping",
    host: pick("host") ?? "0.0.0.0",
    platform: {
      getJobUrl: env.RUNPOD_WEBHOOK_GET_JOB || undefined,
      postOutputUrl: env.RUNPOD_WEBHOOK_POST_OUTPUT || "JOB_DONE_URL",
      postStreamUrl: env.RUNPOD_WEBHOOK_POST_STREAM || "JOB_STREAM_URL",
      pingUrl: env.RUNPOD_WEBHOOK_PING || undefined,
      pingIntervalMs: pick("pingInterval") ?? 10_000,
      workerId: podId || crypto.randomUUID(),
      workerIdFromEnv: Boolean(podId),
      hostname: env.RUNPOD_POD_HOSTNAME || "unknown",
      apiKey: env.RUNPOD_AI_API_KEY ?? "",
      endpointId: env.RUNPOD_ENDPOINT_ID || undefined,
    },
    files: readFilesConfig(env),
    fitness: {
      skipAll: pick("skipFitnessChecks") ?? false,
      skipSystem: pick("skipSystemChecks") ?? false,
      skipGpu: pick("skipGpuCheck") ?? false,
      minMemoryGb: pick("minMemoryGb") ?? 4,
      minDiskPercent: pick("minDiskPercent") ?? 10,
      minCudaVersion: pick("minCudaVersion") ?? "11.8",
      networkTimeoutMs: pick("networkCheckTimeout") ?? 5000,
      networkHost: pick("networkCheckHost") ?? "8.8.8.8",
      networkPort: pick("networkCheckPort") ?? 53,
      gpuBenchmarkTimeoutMs: pick("gpuBenchmarkTimeout") ?? 2000,
      gpuTestTimeoutMs: pick("gpuTestTimeout") ?? 30_000,
    },
  };
  // Keys the process reads are never logged (src/log/redact.ts).
  addSecret(config.platform.apiKey);
  addSecret(config.localApiKey);
  return { config, rest };
}

/** A flag's value, else the first environment variable set, else undefined. */
function pickOption<K extends OptionName>(name: K, fromFlags: Parsed, env: Env): Parsed[K] {
  if (fromFlags[name] !== undefined) return fromFlags[name];
  const option: Option<unknown> = OPTIONS[name];
  for (const variable of option.env) {
    const raw = env[variable];
    if (raw !== undefined && raw !== "")
      return option.parse(raw, `environment variable ${variable}`) as Parsed[K];
  }
  return undefined;
}

/** The file helpers' settings alone: download() and upload() read them when called, from the same options. */
export function readFilesConfig(env: Env = process.env): FilesConfig {
  const pick = <K extends OptionName>(name: K): Parsed[K] => pickOption(name, {}, env);
  addSecret(pick("bucketAccessKeyId"));
  addSecret(pick("bucketSecretAccessKey"));
  return {
    maxDownloadBytes: pick("maxDownloadBytes") ?? 5 * 1024 ** 3,
    allowPrivateDownloads: pick("allowPrivateDownloads") ?? false,
    // Network volumes and cached models mount here in Serverless workers (storage/network-volumes, model-caching).
    volumePath: pick("volumePath") ?? "/runpod-volume",
    bucket: {
      endpointUrl: pick("bucketEndpointUrl"),
      accessKeyId: pick("bucketAccessKeyId"),
      secretAccessKey: pick("bucketSecretAccessKey"),
    },
  };
}

/** LOG_LEVEL (or RUNPOD_LOG_LEVEL) through the one options parser; a bad value keeps INFO, as the toolkit does. */
export function logLevelFrom(env: Record<string, string | undefined> = process.env): LogLevel {
  // Only the level's variables: another bad variable (PORT=x) is not the toolkit's business.
  const levelEnv = Object.fromEntries(OPTIONS.logLevel.env.map((name) => [name, env[name]]));
  try {
    return parseConfig([], levelEnv).config.logLevel;
  } catch {
    return "INFO";
  }
}
