// `flash doctor` as users run it: every check here and now, as a table or JSON; no GPU on a CPU host is
// not a failure; a failing check is (exit 1); with a file, the file's own checks run too.
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeDriverDir, hasCompiler } from "../gpu/fake-driver.js";
import { flashRun } from "../process.js";

let listener: Server;
let env: Record<string, string>;

beforeAll(async () => {
  listener = createServer((socket) => socket.end());
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const { port } = listener.address() as { port: number };
  // The network check dials this listener: tests never reach out.
  env = {
    RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
    RUNPOD_NETWORK_CHECK_PORT: String(port),
    RUNPOD_MIN_DISK_PERCENT: "0",
  };
});

afterAll(() => new Promise((resolve) => listener.close(resolve)));

describe("flash doctor", () => {
  it("on this CPU host: says there is no GPU, every system check passes, exit 0", async () => {
    const { code, stdout } = await flashRun(["doctor"], env);
    expect(code).toBe(0);
    const lines = stdout.split("\n");
    expect(lines[0]).toMatch(/^flash-worker \d+\.\d+\.\d+ \| Node v\d+/);
    expect(lines[1]).toBe("GPU: none (no NVIDIA driver on this host); the GPU checks do not apply.");
    expect(lines[3]).toMatch(/^CHECK\s+RESULT\s+TIME\s+DETAIL$/);
    expect(lines[4]).toMatch(/^_memory_check\s+pass\s+\d+\.\d\dms\s+\d+\.\d\dGB available/);
    expect(lines[5]).toMatch(/^_disk_check\s+pass\s+/);
    expect(lines[6]).toMatch(/^_network_check\s+pass\s+.*Connected to 127\.0\.0\.1:/);
    expect(lines.at(-1)).toBe("All 3 checks passed.");
  });

  it("--json: the GPU facts and each check with its time", async () => {
    const { code, stdout } = await flashRun(["doctor", "--json"], env);
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({
      ok: true,
      gpu: { state: "none", reason: "no NVIDIA driver on this host" },
    });
    expect(report.checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])).toEqual([
      ["_memory_check", true],
      ["_disk_check", true],
      ["_network_check", true],
    ]);
    for (const check of report.checks) expect(typeof check.ms).toBe("number");
  });

  it("runs the checks RUNPOD_SKIP_* would skip, and a file's own checks: a failure is FAIL and exit 1", async () => {
    const { code, stdout } = await flashRun(["doctor", "test/fixtures/fitness.ts"], {
      ...env,
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: "true",
      FITNESS_FAIL: "model_files",
    });
    expect(code).toBe(1);
    expect(stdout).toMatch(/_memory_check\s+pass/);
    expect(stdout).toMatch(
      /model_files\s+FAIL\s+\d+\.\d\dms\s+Error: \/models\/model\.safetensors not found/,
    );
    expect(stdout).toMatch(/warm_cache\s+pass/);
    expect(stdout).toContain(
      "1 of 5 checks failed: on the platform this worker would report itself unhealthy and exit 1.",
    );
  });

  it("a bad setting is a clear error", async () => {
    const { code, stderr } = await flashRun(["doctor"], { ...env, RUNPOD_MIN_CUDA_VERSION: "x" });
    expect(code).toBe(1);
    expect(stderr).toContain(
      'flash doctor: Invalid version "x" in environment variable RUNPOD_MIN_CUDA_VERSION',
    );
  });

  it.runIf(hasCompiler())(
    "on a (stand-in) GPU host: each GPU, the CUDA version and GPU health rows",
    async () => {
      const { code, stdout } = await flashRun(["doctor"], { ...env, FLASH_GPU_LIBRARY_DIR: fakeDriverDir() });
      expect(code).toBe(0);
      expect(stdout).toContain(
        "GPU 0: Fake GPU Zero, 140.4 GiB (138.8 GiB free), 30 °C | GPU-00000000-fake | driver 580.159.04, CUDA 13.0",
      );
      expect(stdout).toMatch(/_cuda_version_check\s+pass\s+.*CUDA 13\.0 \(minimum: 11\.8\)/);
      expect(stdout).toMatch(/_gpu_health_check\s+pass\s+.*2 GPU\(s\) healthy/);
      const broken = await flashRun(["doctor", "--json"], {
        ...env,
        FLASH_GPU_LIBRARY_DIR: fakeDriverDir(),
        FAKE_GPU_FAIL: "cuLaunchKernel:719",
      });
      expect(broken.code).toBe(1);
      const failed = JSON.parse(broken.stdout).checks.find((c: { ok: boolean }) => !c.ok);
      expect(failed).toMatchObject({
        name: "_gpu_health_check",
        error:
          "CudaError: GPU 0 (Fake GPU Zero): cuLaunchKernel(saxpy) failed: CUDA_ERROR_LAUNCH_FAILED (719)",
      });
    },
  );
});
