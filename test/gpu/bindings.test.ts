// The real koffi bindings, run against a C stand-in for libnvidia-ml.so.1 and libcuda.so.1 (the GPU is
// what cannot exist here): every prototype, out-parameter, struct, buffer and the kernel-parameter array
// crosses a real FFI boundary, in this process and in the GPU test process.
import { beforeAll, describe, expect, it } from "vitest";
import { checkCuda } from "../../src/gpu/check.js";
import { Cuda } from "../../src/gpu/cuda.js";
import { readGpuFacts } from "../../src/gpu/facts.js";
import { loadCuda } from "../../src/gpu/ffi.js";
import { runGpuProbe } from "../../src/gpu/probe-runner.js";
import { runSaxpy } from "../../src/gpu/saxpy.js";
import { fakeDriverDir, hasCompiler } from "./fake-driver.js";

const SMALL = { allocBytes: 1 << 20, saxpyLength: 100_000, benchmarkTimeoutMs: 5000 };

describe("koffi bindings against the stand-in driver libraries", () => {
  // A missing compiler is a failure naming what to install (scripts/test-deps.sh installs it), never a skip.
  it("has a C compiler for the stand-in driver", () => {
    expect(
      hasCompiler(),
      "no C compiler (cc): apt-get install gcc, or run scripts/test-deps.sh as root",
    ).toBe(true);
  });
  let env: Record<string, string | undefined>;
  beforeAll(() => {
    env = { ...process.env, FLASH_GPU_LIBRARY_DIR: fakeDriverDir() };
  });

  it("NVML: the inventory, with 64-bit memory sizes and C strings", async () => {
    const facts = await readGpuFacts(env);
    expect(facts).toEqual({
      state: "ok",
      inventory: {
        driverVersion: "580.159.04",
        cudaVersion: "13.0",
        gpus: [
          {
            index: 0,
            name: "Fake GPU Zero",
            uuid: "GPU-00000000-fake",
            memoryTotalBytes: 150754820096,
            memoryFreeBytes: 149000000000,
            temperatureC: 30,
          },
          {
            index: 1,
            name: "Fake GPU One",
            uuid: "GPU-11111111-fake",
            memoryTotalBytes: 150754820097,
            memoryFreeBytes: 149000000000,
            temperatureC: 31,
          },
        ],
      },
    });
  });

  it("NVML error codes come through the binding", async () => {
    // The stand-in reads its faults with getenv(), so in this process they go through process.env.
    process.env.FAKE_GPU_FAIL = "nvmlInit_v2:18";
    const facts = await readGpuFacts(env).finally(() => delete process.env.FAKE_GPU_FAIL);
    expect(facts).toEqual({
      state: "error",
      error: "nvmlInit_v2 failed: NVML_ERROR_LIB_RM_VERSION_MISMATCH (18)",
    });
  });

  it("CUDA: devices, allocation readback and SAXPY with typed-array kernel parameters", async () => {
    const cuda = new Cuda(await loadCuda(env));
    expect(cuda.driverVersion()).toBe("13.0");
    expect(cuda.deviceCount()).toBe(2);
    expect(cuda.device(1)).toEqual({ ordinal: 1, name: "Fake GPU One", computeCapability: "9.0" });
    const result = cuda.withContext(0, (context) => runSaxpy(context, 300_000, -1.5));
    cuda.close();
    expect(result).toMatchObject({ n: 300_000, a: -1.5, mismatches: 0 });
    expect(checkCuda(await loadCuda(env), SMALL).devices).toHaveLength(2);
  });

  it("the GPU test process: a pass, and each fault the driver can show", async () => {
    const probe = (extra: Record<string, string>, timeoutMs = 20_000) =>
      runGpuProbe({ check: SMALL, timeoutMs, env: { ...env, ...extra } });
    const passed = await probe({});
    expect(passed.devices.map((d) => [d.name, d.saxpy.mismatches])).toEqual([
      ["Fake GPU Zero", 0],
      ["Fake GPU One", 0],
    ]);
    await expect(probe({ FAKE_GPU_FAIL: "cuMemAlloc_v2:2" })).rejects.toMatchObject({
      name: "CudaError",
      message: "GPU 0 (Fake GPU Zero): cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)",
    });
    await expect(probe({ FAKE_GPU_CORRUPT: "1" })).rejects.toMatchObject({
      name: "GpuCheckError",
      message: expect.stringContaining("memory readback mismatch: byte 4096 of 1048576"),
    });
    await expect(probe({ FAKE_GPU_WRONG: "1" })).rejects.toThrow(
      "SAXPY result mismatch: 100000 of 100000 elements",
    );
    await expect(probe({ FAKE_GPU_HANG: "cuCtxSynchronize" }, 3000)).rejects.toThrow(
      "GPU test timed out after 3s",
    );
  });
});
