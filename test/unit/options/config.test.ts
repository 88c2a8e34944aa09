import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/options/index.js";
import { DEFAULT_INIT_TIMEOUT_MS, readWorkerConfig } from "../../../src/runtime/config/options.js";

describe("parseConfig: flag > env > default", () => {
  it("defaults", () => {
    const { config, rest } = readWorkerConfig([], {});
    expect(config).toMatchObject({
      logLevel: "INFO",
      logJson: false,
      serveApi: false,
      serveApiLoopback: false,
      apiHost: "localhost",
      apiPort: 8000,
      gracePeriodMs: 30_000,
      port: 80,
      // RunPod: the health check on PORT at /ping unless PORT_HEALTH and HEALTH_CHECK_PATH say otherwise.
      healthPath: "/ping",
    });
    expect(config.healthPort).toBeUndefined();
    expect(readWorkerConfig([], { PORT_HEALTH: "8081", HEALTH_CHECK_PATH: "/health" }).config).toMatchObject({
      healthPort: 8081,
      healthPath: "/health",
    });
    // Unset: the start-up phases get RunPod's 7 minutes (serverless/development/optimization), a declared
    // model server its own startTimeout.
    expect(config.initTimeoutMs).toBeUndefined();
    expect(DEFAULT_INIT_TIMEOUT_MS).toBe(420_000);
    expect(config.platform).toMatchObject({
      postOutputUrl: "JOB_DONE_URL",
      postStreamUrl: "JOB_STREAM_URL",
      pingIntervalMs: 10_000,
      hostname: "unknown",
      apiKey: "",
      workerIdFromEnv: false,
    });
    expect(config.platform.getJobUrl).toBeUndefined();
    expect(config.files).toStrictEqual({
      maxDownloadBytes: 5 * 1024 ** 3,
      allowPrivateDownloads: false,
      volumePath: "/runpod-volume",
      bucket: { endpointUrl: undefined, accessKeyId: undefined, secretAccessKey: undefined },
    });
    expect(rest).toStrictEqual([]);
  });

  it("RUNPOD_INIT_TIMEOUT is in seconds, kept in ms", () => {
    expect(readWorkerConfig([], { RUNPOD_INIT_TIMEOUT: "800" }).config.initTimeoutMs).toBe(800_000);
    expect(readWorkerConfig([], { RUNPOD_INIT_TIMEOUT: "0.5" }).config.initTimeoutMs).toBe(500);
  });

  it("FLASH_HTTP_TRANSPORT: h1 by default, node to go back to node:http (any case); anything else stops the start", () => {
    expect(readWorkerConfig([], {}).config.platform.transport).toBe("h1");
    expect(readWorkerConfig([], { FLASH_HTTP_TRANSPORT: " Node " }).config.platform.transport).toBe("node");
    expect(() => readWorkerConfig([], { FLASH_HTTP_TRANSPORT: "undici" })).toThrow(
      new ConfigError(
        'Invalid transport "undici" in environment variable FLASH_HTTP_TRANSPORT: expected h1 or node',
      ),
    );
  });

  it("the file helpers' variables (rp_download, rp_upload)", () => {
    const { config } = readWorkerConfig([], {
      RUNPOD_MAX_DOWNLOAD_BYTES: "1048576",
      RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS: "yes",
      BUCKET_ENDPOINT_URL: "http://127.0.0.1:9000/renders/",
      BUCKET_ACCESS_KEY_ID: "AK",
      BUCKET_SECRET_ACCESS_KEY: "SK",
      FLASH_VOLUME_PATH: "/mnt/volume",
    });
    expect(config.files).toStrictEqual({
      maxDownloadBytes: 1_048_576,
      allowPrivateDownloads: true,
      volumePath: "/mnt/volume",
      bucket: { endpointUrl: "http://127.0.0.1:9000/renders", accessKeyId: "AK", secretAccessKey: "SK" },
    });
  });

  it("accepts runpod-python spellings and kebab-case, with space or =", () => {
    const a = readWorkerConfig(
      [
        "--rp_log_level",
        "debug",
        "--rp_serve_api",
        "--rp_api_port=9000",
        "--rp_api_host",
        "0.0.0.0",
        "--test_input",
        "{}",
      ],
      {},
    ).config;
    const b = readWorkerConfig(
      ["--log-level=DEBUG", "--serve-api", "--api-port", "9000", "--api-host=0.0.0.0", "--test-input={}"],
      {},
    ).config;
    for (const c of [a, b]) {
      expect(c).toMatchObject({
        logLevel: "DEBUG",
        serveApi: true,
        apiPort: 9000,
        apiHost: "0.0.0.0",
        testInput: "{}",
      });
    }
  });

  it("a flag beats the environment, which beats the default", () => {
    expect(readWorkerConfig(["--log-level", "ERROR"], { LOG_LEVEL: "DEBUG" }).config.logLevel).toBe("ERROR");
    expect(readWorkerConfig([], { LOG_LEVEL: "DEBUG" }).config.logLevel).toBe("DEBUG");
    expect(readWorkerConfig([], { RUNPOD_LOG_LEVEL: "warn" }).config.logLevel).toBe("WARN");
    expect(readWorkerConfig([], { RUNPOD_DEBUG_LEVEL: "error" }).config.logLevel).toBe("ERROR");
    expect(readWorkerConfig([], { LOG_LEVEL: "WARNING", RUNPOD_LOG_LEVEL: "DEBUG" }).config.logLevel).toBe(
      "WARN",
    );
  });

  it("leaves unknown flags and positionals for the user", () => {
    expect(readWorkerConfig(["handler.ts", "--model", "x", "--rp_log_level", "INFO"], {}).rest).toStrictEqual(
      ["handler.ts", "--model", "x"],
    );
  });

  it("reads the platform env vars (docs/protocol.md §2)", () => {
    const { platform } = readWorkerConfig([], {
      RUNPOD_WEBHOOK_GET_JOB: "http://p/job-take/$ID?gpu=X",
      RUNPOD_WEBHOOK_POST_OUTPUT: "http://p/done",
      RUNPOD_WEBHOOK_POST_STREAM: "http://p/stream",
      RUNPOD_WEBHOOK_PING: "http://p/ping",
      RUNPOD_PING_INTERVAL: "5000",
      RUNPOD_POD_ID: "pod1",
      RUNPOD_POD_HOSTNAME: "host1",
      RUNPOD_AI_API_KEY: "key",
      RUNPOD_ENDPOINT_ID: "ep",
    }).config;
    expect(platform).toStrictEqual({
      getJobUrl: "http://p/job-take/$ID?gpu=X",
      postOutputUrl: "http://p/done",
      postStreamUrl: "http://p/stream",
      pingUrl: "http://p/ping",
      pingIntervalMs: 5000,
      workerId: "pod1",
      workerIdFromEnv: true,
      hostname: "host1",
      apiKey: "key",
      endpointId: "ep",
      transport: "h1",
    });
    expect(readWorkerConfig([], { RUNPOD_ENDPOINT_ID: "ep" }).config.logJson).toBe(true);
  });

  it("LOG_FORMAT: text or json, any case; an explicit format replaces the platform's JSON lines", () => {
    expect(readWorkerConfig([], {}).config.logFormat).toBeUndefined();
    expect(readWorkerConfig([], { LOG_FORMAT: "JSON" }).config).toMatchObject({
      logFormat: "json",
      logJson: false,
    });
    expect(readWorkerConfig(["--log-format", "text"], { LOG_FORMAT: "json" }).config.logFormat).toBe("text");
    const platform = { RUNPOD_ENDPOINT_ID: "ep" };
    expect(readWorkerConfig([], { ...platform, LOG_FORMAT: "json" }).config).toMatchObject({
      logFormat: "json",
      logJson: false,
    });
    expect(readWorkerConfig([], { ...platform, LOG_FORMAT: "text" }).config.logJson).toBe(false);
  });

  const bad: Array<[string[], Record<string, string>, string]> = [
    [[], { LOG_LEVEL: "LOUD" }, 'Invalid log level "LOUD" in environment variable LOG_LEVEL'],
    [
      [],
      { LOG_FORMAT: "pretty" },
      'Invalid log format "pretty" in environment variable LOG_FORMAT: expected text or json',
    ],
    [["--rp_log_level", "x"], {}, 'Invalid log level "x" in flag --rp_log_level'],
    [
      ["--rp_api_port", "http"],
      {},
      'Invalid value "http" in flag --rp_api_port: expected a whole number from 0 to 65535',
    ],
    [[], { PORT: "70000" }, 'Invalid value "70000" in environment variable PORT'],
    [[], { PORT_HEALTH: "-1" }, 'Invalid value "-1" in environment variable PORT_HEALTH'],
    [
      [],
      { HEALTH_CHECK_PATH: "health" },
      'Invalid path "health" in environment variable HEALTH_CHECK_PATH: expected a path such as /ping or /health',
    ],
    [[], { FLASH_GRACE_PERIOD: "-1" }, "environment variable FLASH_GRACE_PERIOD (seconds)"],
    [[], { RUNPOD_PING_INTERVAL: "soon" }, "environment variable RUNPOD_PING_INTERVAL"],
    [
      [],
      { RUNPOD_INIT_TIMEOUT: "0" },
      'Invalid value "0" in environment variable RUNPOD_INIT_TIMEOUT: expected more than 0 seconds',
    ],
    [["--test-input"], {}, "Flag --test-input needs a value"],
    [
      [],
      { RUNPOD_MAX_DOWNLOAD_BYTES: "0" },
      'Invalid value "0" in environment variable RUNPOD_MAX_DOWNLOAD_BYTES',
    ],
    [
      [],
      { RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS: "maybe" },
      "RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS: expected true or false",
    ],
    [
      [],
      { BUCKET_ENDPOINT_URL: "s3://bucket" },
      'Invalid URL "s3://bucket" in environment variable BUCKET_ENDPOINT_URL',
    ],
  ];
  for (const [argv, env, message] of bad) {
    it(`rejects ${JSON.stringify(argv)} ${JSON.stringify(env)} with a ConfigError`, () => {
      expect(() => readWorkerConfig(argv, env)).toThrow(ConfigError);
      expect(() => readWorkerConfig(argv, env)).toThrow(message);
    });
  }
});
