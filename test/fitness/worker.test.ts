// The fitness checks in a real queue worker (`flash start` against a recording platform): they run
// before the heartbeat and the first take; a failure is reported to the ping URL and the worker exits 1.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { VERSION } from "../../src/version.js";
import { RecordingPlatform } from "../conformance/recording-platform.js";
import { fakeDriverDir, hasCompiler } from "../gpu/fake-driver.js";
import { flash, flashRun } from "../process.js";

let platform: RecordingPlatform;

beforeEach(async () => {
  platform = await new RecordingPlatform().start();
});

afterEach(async () => {
  await platform.close();
});

const FIXTURE = "test/fixtures/fitness.ts";
const query = (url: string) => Object.fromEntries(new URL(url, "http://x").searchParams);

describe("startup fitness checks in flash start", () => {
  it("all pass: the built-in and the user's checks are logged with their times, then the first take", async () => {
    const worker = flash(["start", FIXTURE], platform.env());
    platform.push({ id: "after-checks", input: { n: 1 } });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    const out = worker.stdout.join("\n");
    expect(out).toContain("Running 5 fitness check(s)...");
    for (const name of ["_memory_check", "_disk_check", "_network_check", "model_files", "warm_cache"])
      expect(out).toMatch(new RegExp(`Fitness check passed: ${name} \\(\\d+(\\.\\d\\d)?ms\\)`));
    expect(out).toMatch(/Fitness check passed: model_files \(\d+\.\d\dms\) \| 1 model file found/);
    // The network check dialled the platform stand-in, as RUNPOD_NETWORK_CHECK_HOST/PORT say.
    expect(out).toContain(`Connected to 127.0.0.1:${new URL(platform.base).port}`);
    const passedAt = worker.stdout.findIndex((l) => l.includes("All fitness checks passed."));
    expect(passedAt).toBeGreaterThan(0);
    expect(platform.of("done").map((r) => JSON.parse(r.body))).toEqual([{ output: { echoed: { n: 1 } } }]);
    expect(
      platform.requests.filter((r) => r.route === "ping" && query(r.url).status === "unhealthy"),
    ).toEqual([]);
  });

  it("a user's check fails: one unhealthy report (raw key, reason cut to 256), exit 1, no job taken", async () => {
    const worker = flash(["start", FIXTURE], {
      ...platform.env("w7", "secret-key"),
      FITNESS_FAIL: "warm_cache",
    });
    platform.push({ id: "never-taken", input: {} });
    expect(await worker.exited).toBe(1);
    expect(platform.of("take")).toEqual([]);
    const reports = platform.of("ping");
    expect(reports).toHaveLength(1);
    const report = reports[0]!;
    expect(report.method).toBe("GET");
    expect(report.headers.authorization).toBe("secret-key");
    expect(new URL(report.url, "http://x").pathname).toBe("/v2/EP/ping/w7");
    const reason = `TypeError: cache warm-up failed: ${"x".repeat(400)}`.slice(0, 256);
    expect(query(report.url)).toEqual({
      gpu: "X",
      status: "unhealthy",
      check: "warm_cache",
      reason,
      runpod_version: VERSION,
    });
    const out = worker.stdout.join("\n");
    expect(out).toContain("Fitness check failed: warm_cache | TypeError: cache warm-up failed");
    expect(out).toContain("Worker is unhealthy, exiting.");
    expect(out).not.toContain("Fitness check passed: warm_cache");
  });

  it("a report the platform refuses is swallowed: the exit still comes", async () => {
    platform.responders.push((r) => (r.route === "ping" ? { status: 500 } : undefined));
    const worker = flash(["start", FIXTURE], { ...platform.env(), FITNESS_FAIL: "model_files" });
    // A failing report is swallowed: the exit is the guarantee.
    expect(await worker.exited).toBe(1);
    expect(query(platform.of("ping")[0]!.url).reason).toBe("Error: /models/model.safetensors not found");
  });

  it("RUNPOD_SKIP_FITNESS_CHECKS=true: no check runs, not even the failing one", async () => {
    const worker = flash(["start", FIXTURE], {
      ...platform.env(),
      FITNESS_FAIL: "model_files",
      RUNPOD_SKIP_FITNESS_CHECKS: "true",
    });
    platform.push({ id: "j", input: 2 });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    expect(worker.stdout.join("\n")).toContain(
      "Fitness checks disabled via RUNPOD_SKIP_FITNESS_CHECKS, skipping.",
    );
  });

  it("never in a local test run (flash run)", async () => {
    const { code, stdout, stderr } = await flashRun(["run", FIXTURE, "--test-input", '{"input":{"a":1}}'], {
      FITNESS_FAIL: "model_files",
    });
    expect(code).toBe(0);
    expect(stderr).not.toContain("fitness check");
    expect(stdout).toBe('{"output":{"echoed":{"a":1}}}');
  });

  it("a bad setting is a clear error at start", async () => {
    const { code, stderr } = await flashRun(["start", FIXTURE], {
      ...platform.env(),
      RUNPOD_MIN_MEMORY_GB: "lots",
    });
    expect(code).toBe(1);
    expect(stderr).toContain(
      'flash-worker: Invalid value "lots" in environment variable RUNPOD_MIN_MEMORY_GB: expected a number from 0 to 1000000',
    );
  });
});

describe("RUNPOD_INIT_TIMEOUT and the start log (docs/protocol.md §10.1)", () => {
  const COLD = "test/fixtures/cold-start.ts";

  it("the start log gives each phase in ms, then the first take", async () => {
    const worker = flash(["start", COLD], { ...platform.env(), RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true" });
    platform.push({ id: "j1", input: 1 });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    const line = worker.stdout.find((l) => l.includes("Worker started in"));
    expect(line).toMatch(/Worker started in \d+ ms \| import \d+ ms, fitness \d+ ms, warm-up \d+ ms$/);
    // The warm-up ran once, before the first job.
    expect(platform.of("done").map((r) => JSON.parse(r.body))).toEqual([
      { output: { echoed: 1, warmed: 1 } },
    ]);
  });

  it("an Endpoint's onStart hook (declared after .handler()) is the queue worker's warm-up", async () => {
    const worker = flash(["start", COLD], {
      ...platform.env(),
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
      COLD_ENDPOINT: "1",
    });
    platform.push({ id: "j2", input: "x" });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    expect(platform.of("done").map((r) => JSON.parse(r.body))).toEqual([
      { output: { echoed: "x", warmed: 1 } },
    ]);
  });

  it("a warm-up that throws: one unhealthy report (check=warm_up), exit 1, no job taken", async () => {
    const worker = flash(["start", COLD], {
      ...platform.env(),
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
      COLD_WARM_FAIL: "1",
    });
    platform.push({ id: "never-taken", input: {} });
    expect(await worker.exited).toBe(1);
    expect(platform.of("take")).toEqual([]);
    expect(platform.of("ping").map((r) => query(r.url))).toEqual([
      {
        gpu: "X",
        status: "unhealthy",
        check: "warm_up",
        reason: "RangeError: model weights missing",
        runpod_version: VERSION,
      },
    ]);
    const out = worker.stdout.join("\n");
    expect(out).toContain("Warm-up failed: RangeError: model weights missing");
    expect(out).toContain("Worker is unhealthy, exiting.");
  });

  it("a warm-up still running at RUNPOD_INIT_TIMEOUT is unhealthy too", async () => {
    const worker = flash(["start", COLD], {
      ...platform.env(),
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
      RUNPOD_INIT_TIMEOUT: "2",
      COLD_HANG: "warm-up",
    });
    expect(await worker.exited).toBe(1);
    expect(platform.of("take")).toEqual([]);
    expect(query(platform.of("ping")[0]!.url).reason).toBe(
      "start-up exceeded RUNPOD_INIT_TIMEOUT (2 s) during warm-up",
    );
  });

  it("flash run runs the warm-up before the test job; a failing one exits 1", async () => {
    const ok = await flashRun(["run", COLD, "--test-input", '{"input":7}']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe('{"output":{"echoed":7,"warmed":1}}');
    expect(ok.stderr).toMatch(/Warm-up done\. \(\d+ ms\)/);
    const failed = await flashRun(["run", COLD, "--test-input", '{"input":7}'], { COLD_WARM_FAIL: "1" });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe("");
    expect(failed.stderr).toContain("Warm-up failed: RangeError: model weights missing");
  });

  it("a fitness check still running at RUNPOD_INIT_TIMEOUT: one unhealthy report, exit 1, no job taken", async () => {
    const worker = flash(["start", COLD], {
      ...platform.env("w9"),
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
      RUNPOD_INIT_TIMEOUT: "2",
      COLD_HANG: "fitness",
    });
    platform.push({ id: "never-taken", input: {} });
    expect(await worker.exited).toBe(1);
    expect(platform.of("take")).toEqual([]);
    const reports = platform.of("ping").map((r) => query(r.url));
    expect(reports).toEqual([
      {
        gpu: "X",
        status: "unhealthy",
        check: "init_timeout",
        reason: "start-up exceeded RUNPOD_INIT_TIMEOUT (2 s) during fitness",
        runpod_version: VERSION,
      },
    ]);
    const out = worker.stdout.join("\n");
    expect(out).toMatch(
      /Worker start-up took longer than RUNPOD_INIT_TIMEOUT \(2 s\); still in fitness after \d+ ms/,
    );
    expect(out).toContain("Worker is unhealthy, exiting.");
  });
});

describe.runIf(hasCompiler())("on a (stand-in) GPU host", () => {
  it("the start log lists each GPU; the CUDA version and GPU health checks pass before the first take", async () => {
    const worker = flash(["start", FIXTURE], { ...platform.env(), FLASH_GPU_LIBRARY_DIR: fakeDriverDir() });
    platform.push({ id: "gpu-job", input: {} });
    await platform.waitFor((rs) => rs.some((r) => r.route === "done"));
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    const out = worker.stdout.join("\n");
    expect(out).toContain(
      "GPU 0: Fake GPU Zero, 140.4 GiB (138.8 GiB free), 30 °C | driver 580.159.04, CUDA 13.0",
    );
    expect(out).toContain(
      "GPU 1: Fake GPU One, 140.4 GiB (138.8 GiB free), 31 °C | driver 580.159.04, CUDA 13.0",
    );
    expect(out).toContain("Running 7 fitness check(s)...");
    expect(out).toMatch(
      /Fitness check passed: _cuda_version_check \(\d+\.\d\dms\) \| CUDA 13\.0 \(minimum: 11\.8\)/,
    );
    expect(out).toMatch(
      /Fitness check passed: _gpu_health_check \(\d+(\.\d\d)?ms\) \| 2 GPU\(s\) healthy \(CUDA 13\.0\); GPU 0 Fake GPU Zero: /,
    );
  });

  it("a GPU fault: the unhealthy report names _gpu_health_check and the CUDA error; exit 1", async () => {
    const worker = flash(["start", FIXTURE], {
      ...platform.env(),
      FLASH_GPU_LIBRARY_DIR: fakeDriverDir(),
      FAKE_GPU_FAIL: "cuMemAlloc_v2:2",
    });
    expect(await worker.exited).toBe(1);
    expect(platform.of("take")).toEqual([]);
    expect(query(platform.of("ping")[0]!.url)).toMatchObject({
      status: "unhealthy",
      check: "_gpu_health_check",
      reason: "CudaError: GPU 0 (Fake GPU Zero): cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)",
    });
  });

  it("the CUDA version below RUNPOD_MIN_CUDA_VERSION fails before the GPU test runs", async () => {
    const worker = flash(["start", FIXTURE], {
      ...platform.env(),
      FLASH_GPU_LIBRARY_DIR: fakeDriverDir(),
      FAKE_GPU_CUDA_VERSION: "11040",
    });
    expect(await worker.exited).toBe(1);
    expect(query(platform.of("ping")[0]!.url)).toMatchObject({
      check: "_cuda_version_check",
      reason: "FitnessCheckError: CUDA version too old: 11.4 found, 11.8 required",
    });
  });
});
