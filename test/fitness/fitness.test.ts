// The fitness checks in-process: built-in checks and their runpod-python messages, the order they run in,
// fitnessCheck() registration, the startup runner's log lines and unhealthy report, and their settings.
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GpuFacts } from "../../src/gpu/facts.js";
import { createLogger } from "../../src/log/index.js";
import { ConfigError } from "../../src/options/index.js";
import { readWorkerConfig } from "../../src/runtime/config/options.js";
import { registeredChecks, registerFitnessCheck } from "../../src/runtime/fitness/registry.js";
import { runChecks } from "../../src/runtime/fitness/run.js";
import { runStartupChecks } from "../../src/runtime/fitness/startup.js";
import {
  builtinChecks,
  cudaVersionCheck,
  diskCheck,
  gpuHealthCheck,
  memoryCheck,
  networkCheck,
} from "../../src/runtime/fitness/system.js";
import { platformUrls } from "../../src/runtime/queue/urls.js";

const GIB = 1024 ** 3;
const fitness = (env: Record<string, string> = {}) => readWorkerConfig([], env).config.fitness;
const NO_GPU: GpuFacts = { state: "none", reason: "no NVIDIA driver on this host" };
const H200: GpuFacts = {
  state: "ok",
  inventory: {
    driverVersion: "580.159.04",
    cudaVersion: "13.0",
    gpus: [{ index: 0, name: "NVIDIA H200", uuid: "GPU-1", memoryTotalBytes: 150e9, memoryFreeBytes: 149e9 }],
  },
};
const passingProbe = async () => ({
  cudaVersion: "13.0",
  devices: [
    {
      ordinal: 0,
      name: "NVIDIA H200",
      computeCapability: "9.0",
      contextMs: 110,
      allocMs: 40,
      computeMs: 93.5,
      saxpy: { n: 1 << 20, mismatches: 0, kernelMs: 0.01, gbPerSecond: 1200 },
    },
  ],
});

function lines() {
  const out: string[] = [];
  const log = createLogger({ level: "DEBUG", json: false, destination: { write: (l) => out.push(l) } });
  return { out, log };
}

describe("settings (runpod-python's names and defaults)", () => {
  it("defaults", () => {
    expect(fitness()).toEqual({
      skipAll: false,
      skipSystem: false,
      skipGpu: false,
      minMemoryGb: 4,
      minDiskPercent: 10,
      minCudaVersion: "11.8",
      networkTimeoutMs: 5000,
      networkHost: "8.8.8.8",
      networkPort: 53,
      gpuBenchmarkTimeoutMs: 2000,
      gpuTestTimeoutMs: 30_000,
    });
  });

  it("every variable, and a clear error for a bad value", () => {
    expect(
      fitness({
        RUNPOD_SKIP_FITNESS_CHECKS: "false",
        RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
        RUNPOD_SKIP_GPU_CHECK: "TRUE",
        RUNPOD_MIN_MEMORY_GB: "0.5",
        RUNPOD_MIN_DISK_PERCENT: "2.5",
        RUNPOD_MIN_CUDA_VERSION: "12",
        RUNPOD_NETWORK_CHECK_TIMEOUT: "1.5",
        RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
        RUNPOD_NETWORK_CHECK_PORT: "8080",
        RUNPOD_GPU_BENCHMARK_TIMEOUT: "3",
        RUNPOD_GPU_TEST_TIMEOUT: "60",
      }),
    ).toEqual({
      skipAll: false,
      skipSystem: true,
      skipGpu: true,
      minMemoryGb: 0.5,
      minDiskPercent: 2.5,
      minCudaVersion: "12.0",
      networkTimeoutMs: 1500,
      networkHost: "127.0.0.1",
      networkPort: 8080,
      gpuBenchmarkTimeoutMs: 3000,
      gpuTestTimeoutMs: 60_000,
    });
    const bad: [Record<string, string>, string][] = [
      [
        { RUNPOD_MIN_MEMORY_GB: "four" },
        'Invalid value "four" in environment variable RUNPOD_MIN_MEMORY_GB: expected a number from 0 to 1000000',
      ],
      [
        { RUNPOD_MIN_DISK_PERCENT: "150" },
        'Invalid value "150" in environment variable RUNPOD_MIN_DISK_PERCENT: expected a number from 0 to 100',
      ],
      [
        { RUNPOD_MIN_CUDA_VERSION: "twelve" },
        'Invalid version "twelve" in environment variable RUNPOD_MIN_CUDA_VERSION: expected major.minor, e.g. 11.8',
      ],
      [
        { RUNPOD_GPU_TEST_TIMEOUT: "0" },
        'Invalid value "0" in environment variable RUNPOD_GPU_TEST_TIMEOUT: expected more than 0 seconds',
      ],
      [
        { RUNPOD_SKIP_GPU_CHECK: "maybe" },
        'Invalid value "maybe" in environment variable RUNPOD_SKIP_GPU_CHECK: expected true or false (or 1/0, yes/no)',
      ],
      [
        { RUNPOD_NETWORK_CHECK_PORT: "70000" },
        'Invalid value "70000" in environment variable RUNPOD_NETWORK_CHECK_PORT: expected a whole number from 1 to 65535',
      ],
    ];
    for (const [env, message] of bad) expect(() => fitness(env)).toThrow(new ConfigError(message));
  });
});

describe("built-in checks", () => {
  it("memory: available against RUNPOD_MIN_MEMORY_GB", async () => {
    const read = (free: number) => ({ free: () => free * GIB, total: () => 16 * GIB });
    const [ok] = await runChecks([memoryCheck(fitness(), read(6.5))], { stopAtFailure: true });
    expect(ok).toMatchObject({
      name: "_memory_check",
      ok: true,
      detail: "6.50GB available (of 16.00GB total)",
    });
    const [low] = await runChecks([memoryCheck(fitness(), read(3.25))], { stopAtFailure: true });
    expect(low).toMatchObject({
      ok: false,
      error: "FitnessCheckError: Insufficient memory: 3.25GB available, 4.0GB required",
    });
  });

  it("disk: free space on / against RUNPOD_MIN_DISK_PERCENT", async () => {
    const read = (free: number) => () => ({ totalBytes: 100 * GIB, freeBytes: free * GIB });
    const [low] = await runChecks([diskCheck(fitness(), read(5))], { stopAtFailure: true });
    expect(low?.error).toBe("FitnessCheckError: Insufficient disk space: 5.00GB free (5.0%), 10.0% required");
    const [ok] = await runChecks([diskCheck(fitness({ RUNPOD_MIN_DISK_PERCENT: "2.5" }), read(5))], {
      stopAtFailure: true,
    });
    expect(ok).toMatchObject({ ok: true, detail: "5.00GB free (5.0% available)" });
    const [real] = await runChecks([diskCheck(fitness({ RUNPOD_MIN_DISK_PERCENT: "0" }))], {
      stopAtFailure: true,
    });
    expect(real?.ok).toBe(true);
  });

  describe("network", () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((socket) => socket.end());
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    it("connects to the configured host and port (never the internet in tests)", async () => {
      const config = fitness({
        RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
        RUNPOD_NETWORK_CHECK_PORT: String(port),
      });
      const [ok] = await runChecks([networkCheck(config)], { stopAtFailure: true });
      expect(ok?.ok).toBe(true);
      expect(ok?.detail).toMatch(new RegExp(`^Connected to 127\\.0\\.0\\.1:${port} \\(\\d+ms\\)$`));
    });

    it("a refused connection fails with runpod-python's message", async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
      const gone = (closed.address() as { port: number }).port;
      await new Promise((resolve) => closed.close(resolve));
      const config = fitness({
        RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
        RUNPOD_NETWORK_CHECK_PORT: String(gone),
      });
      const [refused] = await runChecks([networkCheck(config)], { stopAtFailure: true });
      expect(refused?.error).toBe(
        `FitnessCheckError: Network connectivity failed: Connection refused to 127.0.0.1:${gone}`,
      );
    });
  });

  it("CUDA version against RUNPOD_MIN_CUDA_VERSION", async () => {
    const results = await runChecks(
      [
        cudaVersionCheck(fitness(), "13.0"),
        cudaVersionCheck(fitness(), "11.4"),
        cudaVersionCheck(fitness({ RUNPOD_MIN_CUDA_VERSION: "12.9" }), "12.8"),
      ],
      { stopAtFailure: false },
    );
    expect(results.map((r) => r.detail ?? r.error)).toEqual([
      "CUDA 13.0 (minimum: 11.8)",
      "FitnessCheckError: CUDA version too old: 11.4 found, 11.8 required",
      "FitnessCheckError: CUDA version too old: 12.8 found, 12.9 required",
    ]);
  });

  it("GPU health: the test process's result per GPU; NVML errors and missing GPUs fail", async () => {
    const [ok] = await runChecks([gpuHealthCheck({ config: fitness(), facts: H200, probe: passingProbe })], {
      stopAtFailure: true,
    });
    expect(ok?.detail).toBe(
      "1 GPU(s) healthy (CUDA 13.0); GPU 0 NVIDIA H200: context 110ms, alloc+readback 40ms, SAXPY 1048576 floats 93.5ms (kernel 0.010ms, 1200 GB/s)",
    );
    const broken: GpuFacts = {
      state: "error",
      error: "nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9)",
    };
    const two: GpuFacts = {
      ...H200,
      inventory: {
        ...H200.inventory,
        gpus: [...H200.inventory.gpus, { ...H200.inventory.gpus[0]!, index: 1 }],
      },
    } as GpuFacts;
    const results = await runChecks(
      [
        gpuHealthCheck({ config: fitness(), facts: broken, probe: passingProbe }),
        gpuHealthCheck({ config: fitness(), facts: two, probe: passingProbe }),
      ],
      { stopAtFailure: false },
    );
    expect(results.map((r) => r.error)).toEqual([
      "FitnessCheckError: GPU health check failed: NVML: nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9)",
      "FitnessCheckError: GPU health check failed: NVML lists 2 GPU(s), CUDA initialised 1",
    ]);
  });

  it("the probe gets RUNPOD_GPU_BENCHMARK_TIMEOUT and RUNPOD_GPU_TEST_TIMEOUT", async () => {
    const seen: unknown[] = [];
    const probe = async (options: unknown) => {
      seen.push(options);
      return passingProbe();
    };
    const config = fitness({ RUNPOD_GPU_BENCHMARK_TIMEOUT: "0.5", RUNPOD_GPU_TEST_TIMEOUT: "12" });
    await gpuHealthCheck({ config, facts: H200, probe }).run();
    expect(seen).toEqual([
      {
        check: { allocBytes: 64 * 1024 * 1024, saxpyLength: 1 << 20, benchmarkTimeoutMs: 500 },
        timeoutMs: 12_000,
      },
    ]);
  });

  it("which run where, in order; RUNPOD_SKIP_* turn them off", () => {
    const names = (env: Record<string, string>, facts: GpuFacts) =>
      builtinChecks(fitness(env), facts).map((c) => c.name);
    expect(names({}, NO_GPU)).toEqual(["_memory_check", "_disk_check", "_network_check"]);
    expect(names({}, H200)).toEqual([
      "_memory_check",
      "_disk_check",
      "_network_check",
      "_cuda_version_check",
      "_gpu_health_check",
    ]);
    expect(names({ RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true" }, H200)).toEqual(["_gpu_health_check"]);
    expect(names({ RUNPOD_SKIP_GPU_CHECK: "true" }, H200)).not.toContain("_gpu_health_check");
    expect(names({ RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true", RUNPOD_SKIP_GPU_CHECK: "true" }, H200)).toEqual(
      [],
    );
  });
});

describe("fitnessCheck() and the startup run", () => {
  const quiet = { RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true" };

  it("registration: names must be unique and non-empty, fn a function", () => {
    const before = registeredChecks().length;
    registerFitnessCheck("registry_test", () => {});
    expect(() => registerFitnessCheck("registry_test", () => {})).toThrow(
      'fitnessCheck("registry_test") is already registered',
    );
    expect(() => registerFitnessCheck(" ", () => {})).toThrow(
      "fitnessCheck(name, fn): name must be a non-empty string",
    );
    expect(() => registerFitnessCheck("x", "no" as never)).toThrow(
      'fitnessCheck("x", fn): fn must be a function',
    );
    expect(registeredChecks().length).toBe(before + 1);
    registeredChecks().splice(before);
  });

  it("built-in checks first, then the user's in registration order; each logged with its time", async () => {
    const before = registeredChecks().length;
    const order: string[] = [];
    registerFitnessCheck("first", () => {
      order.push("first");
    });
    registerFitnessCheck("second", async () => {
      order.push("second");
      return "all good";
    });
    const { out, log } = lines();
    const reports: unknown[] = [];
    const ok = await runStartupChecks({
      config: fitness({ RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true" }),
      facts: H200,
      log,
      probe: passingProbe,
      reportUnhealthy: async (...args) => {
        reports.push(args);
      },
    });
    registeredChecks().splice(before);
    expect(ok).toBe(true);
    expect(order).toEqual(["first", "second"]);
    expect(reports).toEqual([]);
    const text = out.map((l) => l.split(" | ").slice(1).join(" | ").trim());
    expect(text[0]).toBe("INFO | flash-worker | Running 3 fitness check(s)...");
    expect(text[1]).toMatch(
      /^INFO \| flash-worker \| Fitness check passed: _gpu_health_check \(\d+\.\d\dms\) \| 1 GPU\(s\) healthy/,
    );
    expect(text[2]).toMatch(/^INFO \| flash-worker \| Fitness check passed: first \(\d+\.\d\dms\)$/);
    expect(text[3]).toMatch(
      /^INFO \| flash-worker \| Fitness check passed: second \(\d+\.\d\dms\) \| all good$/,
    );
    expect(text[4]).toMatch(/^INFO \| flash-worker \| All fitness checks passed\. \(\d+(\.\d\d)?ms\)$/);
  });

  it("the first failure: logged, reported with its name and reason, later checks never run", async () => {
    const before = registeredChecks().length;
    let ranAfter = false;
    registerFitnessCheck("needs_model", () => {
      throw new RangeError("model missing");
    });
    registerFitnessCheck("after", () => {
      ranAfter = true;
    });
    const { out, log } = lines();
    const reports: unknown[][] = [];
    const ok = await runStartupChecks({
      config: fitness(quiet),
      facts: NO_GPU,
      log,
      reportUnhealthy: async (...args) => {
        reports.push(args);
      },
    });
    registeredChecks().splice(before);
    expect(ok).toBe(false);
    expect(ranAfter).toBe(false);
    expect(reports).toEqual([["needs_model", "RangeError: model missing", 2000]]);
    const text = out.map((l) => l.split(" | ").slice(1).join(" | "));
    expect(text).toContain(
      "ERROR | flash-worker | Fitness check failed: needs_model | RangeError: model missing\n",
    );
    expect(
      text.some((l) => l.startsWith("DEBUG | flash-worker | Traceback:\nRangeError: model missing")),
    ).toBe(true);
    expect(text.at(-1)).toBe("ERROR | flash-worker | Worker is unhealthy, exiting.\n");
  });

  it("RUNPOD_SKIP_FITNESS_CHECKS runs nothing, user checks included", async () => {
    const before = registeredChecks().length;
    registerFitnessCheck("never", () => {
      throw new Error("ran");
    });
    const { out, log } = lines();
    const ok = await runStartupChecks({
      config: fitness({ RUNPOD_SKIP_FITNESS_CHECKS: "true" }),
      facts: H200,
      log,
      reportUnhealthy: async () => {},
    });
    registeredChecks().splice(before);
    expect(ok).toBe(true);
    expect(out.join("")).toContain("Fitness checks disabled via RUNPOD_SKIP_FITNESS_CHECKS, skipping.");
  });
});

describe("the unhealthy report's URL (docs/protocol.md §3.8)", () => {
  const urls = (pingUrl?: string) =>
    platformUrls({
      pingUrl,
      postOutputUrl: "x",
      postStreamUrl: "x",
      pingIntervalMs: 10_000,
      workerId: "w1",
      workerIdFromEnv: true,
      hostname: "h",
      apiKey: "K",
    });

  it("the ping URL with $RUNPOD_POD_ID filled, status, check, reason cut to 256 characters, version", () => {
    const url = urls("https://api.runpod.ai/v2/EP/ping/$RUNPOD_POD_ID?gpu=NVIDIA+H200").unhealthy(
      "_gpu_health_check",
      `CudaError: ${"e".repeat(300)}`,
      "0.1.0",
    );
    const parsed = new URL(url!);
    expect(parsed.pathname).toBe("/v2/EP/ping/w1");
    expect(Object.fromEntries(parsed.searchParams)).toEqual({
      gpu: "NVIDIA H200",
      status: "unhealthy",
      check: "_gpu_health_check",
      reason: `CudaError: ${"e".repeat(245)}`,
      runpod_version: "0.1.0",
    });
  });

  it("no report without a ping URL, or with runpod-python's PING_NOT_SET", () => {
    expect(urls(undefined).unhealthy("c", "r", "v")).toBeUndefined();
    expect(urls("PING_NOT_SET").unhealthy("c", "r", "v")).toBeUndefined();
  });
});
