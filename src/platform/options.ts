// The local platform's options (flash dev, flash serve): where it listens, its key, the container tool its REST
// deploys run workers with, how long a worker may take to start, and the memory job payloads may hold.
import { CONTAINER_OPTIONS } from "../containers/options.js";
import { apiKey, integer, LOG_OPTIONS, type OptionTable, seconds, text } from "../options/index.js";

export const PLATFORM_OPTIONS = {
  host: {
    flags: ["--host"],
    parse: text,
    default: "127.0.0.1",
    value: "HOST",
    help: "address to listen on (default 127.0.0.1)",
  },
  port: {
    flags: ["--port"],
    parse: integer(0, 65535),
    default: 8000,
    value: "PORT",
    help: "port to listen on (default 8000)",
  },
  apiKey: {
    flags: ["--api-key"],
    env: ["FLASH_API_KEY"],
    parse: apiKey,
    secret: true,
    value: "KEY",
    help: "the platform's API key (env FLASH_API_KEY; generated when not given)",
  },
  ...LOG_OPTIONS,
  ...CONTAINER_OPTIONS,
  /** RUNPOD_INIT_TIMEOUT, as RunPod reads it: how long a worker may take to start before it is replaced. */
  initTimeout: { env: ["RUNPOD_INIT_TIMEOUT"], parse: seconds(86_400) },
  memoryMb: {
    flags: ["--memory-mb"],
    env: ["FLASH_PLATFORM_MEMORY_MB"],
    parse: integer(1, 1_048_576),
    value: "MB",
    help: "memory job payloads may hold, queued and kept (env FLASH_PLATFORM_MEMORY_MB; default a quarter of the heap limit)",
  },
} as const satisfies OptionTable;
