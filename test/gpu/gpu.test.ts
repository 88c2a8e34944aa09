// The GPU module on a CPU host: NVML inventory and the CUDA health check against fakes, every failure
// path (no driver, NVML error codes, allocation failure, readback and result mismatches, too slow, timeout).
import { describe, expect, it } from "vitest";
import { checkCuda, DEFAULT_CUDA_CHECK } from "../../src/gpu/check.js";
import { Cuda, NO_CUDA_MESSAGE } from "../../src/gpu/cuda.js";
import { CudaError, GpuCheckError, NoGpuError, NvmlError } from "../../src/gpu/errors.js";
import { gpuLabel, gpuSummary, readGpuFacts } from "../../src/gpu/facts.js";
import { driverPresent } from "../../src/gpu/ffi.js";
import { cudaVersionText, describeGpu, readInventory } from "../../src/gpu/nvml.js";
import { runGpuProbe } from "../../src/gpu/probe-runner.js";
import { runSaxpy, saxpyInputs } from "../../src/gpu/saxpy.js";
import { fakeCuda, fakeNvml } from "./fakes.js";

const SMALL = { allocBytes: 1 << 16, saxpyLength: 5000, benchmarkTimeoutMs: 2000 };
const NO_DRIVER_ENV = { PATH: "" };

describe("NVML inventory", () => {
  it("lists each GPU with name, uuid, memory and temperature, and the driver's CUDA version", () => {
    const nvml = fakeNvml({ names: ["NVIDIA H200", "NVIDIA H100 80GB HBM3"] });
    const inventory = readInventory(nvml);
    expect(inventory).toEqual({
      driverVersion: "580.159.04",
      cudaVersion: "13.0",
      gpus: [
        {
          index: 0,
          name: "NVIDIA H200",
          uuid: "GPU-1",
          memoryTotalBytes: 150_754_820_096,
          memoryFreeBytes: 149_000_000_000,
          temperatureC: 31,
        },
        expect.objectContaining({ index: 1, name: "NVIDIA H100 80GB HBM3", uuid: "GPU-2" }),
      ],
    });
    expect(nvml.shutdowns).toBe(1);
    expect(describeGpu(inventory.gpus[0]!)).toBe("NVIDIA H200, 140.4 GiB (138.8 GiB free), 31 °C");
    expect(gpuSummary({ state: "ok", inventory })).toEqual({
      driver: "580.159.04",
      cuda: "13.0",
      gpus: [
        { name: "NVIDIA H200", memoryTotalMiB: 143771 },
        { name: "NVIDIA H100 80GB HBM3", memoryTotalMiB: 143771 },
      ],
    });
  });

  it("the one-line label groups GPUs alike", () => {
    const label = (names: string[]) =>
      gpuLabel({ state: "ok", inventory: readInventory(fakeNvml({ names })) });
    expect(label(["NVIDIA H200"])).toBe("NVIDIA H200");
    expect(label(["NVIDIA H200", "NVIDIA H200", "NVIDIA L4"])).toBe("2 × NVIDIA H200, NVIDIA L4");
    expect(gpuLabel({ state: "none", reason: "x" })).toBeUndefined();
  });

  it("names NVML's error codes, and shuts NVML down after a failure", () => {
    expect(() => readInventory(fakeNvml({ fail: { nvmlInit_v2: 9 } }))).toThrow(
      new NvmlError("nvmlInit_v2", 9),
    );
    expect(new NvmlError("nvmlInit_v2", 9).message).toBe(
      "nvmlInit_v2 failed: NVML_ERROR_DRIVER_NOT_LOADED (9)",
    );
    const lost = fakeNvml({ fail: { nvmlDeviceGetMemoryInfo: 15 } });
    expect(() => readInventory(lost)).toThrow("nvmlDeviceGetMemoryInfo failed: NVML_ERROR_GPU_IS_LOST (15)");
    expect(lost.shutdowns).toBe(1);
    expect(() => readInventory(fakeNvml({ fail: { nvmlDeviceGetCount_v2: 1234 } }))).toThrow(
      "nvmlDeviceGetCount_v2 failed: NVML error 1234 (1234)",
    );
  });

  it("a board without a temperature sensor is not a fault; another temperature error is", () => {
    const inventory = readInventory(fakeNvml({ fail: { nvmlDeviceGetTemperature: 3 } }));
    expect(inventory.gpus[0]!.temperatureC).toBeUndefined();
    expect(() => readInventory(fakeNvml({ fail: { nvmlDeviceGetTemperature: 15 } }))).toThrow(
      "NVML_ERROR_GPU_IS_LOST",
    );
  });

  it("CUDA versions read as major.minor", () => {
    expect([13000, 12080, 11080, 12020].map(cudaVersionText)).toEqual(["13.0", "12.8", "11.8", "12.2"]);
  });
});

describe("no NVIDIA driver (this host)", () => {
  it.runIf(!driverPresent(NO_DRIVER_ENV))(
    "the facts say no GPU, and CUDA refuses with a plain error",
    async () => {
      expect(await readGpuFacts(NO_DRIVER_ENV)).toEqual({
        state: "none",
        reason: "no NVIDIA driver on this host",
      });
      const opening = Cuda.open(NO_DRIVER_ENV);
      await expect(opening).rejects.toThrow(NoGpuError);
      await expect(opening).rejects.toThrow(NO_CUDA_MESSAGE);
      expect(NO_CUDA_MESSAGE).toMatch(/^CUDA is not available on this host/);
    },
  );

  it("a library folder without the driver's libraries is no GPU either", async () => {
    const env = { FLASH_GPU_LIBRARY_DIR: "/nonexistent-nvidia-libs" };
    const facts = await readGpuFacts(env);
    expect(facts.state).toBe("none");
    expect(facts.state === "none" && facts.reason).toContain("libnvidia-ml.so.1 could not be loaded");
    await expect(Cuda.open(env)).rejects.toThrow(/CUDA is not available on this host.*libcuda\.so\.1/);
  });
});

describe("the CUDA health check", () => {
  it("passes on every device: context, allocation readback, SAXPY against the CPU; memory is freed", () => {
    const lib = fakeCuda({ devices: 2 });
    const result = checkCuda(lib, SMALL);
    expect(result.cudaVersion).toBe("13.0");
    expect(result.devices.map((d) => [d.ordinal, d.name, d.computeCapability, d.saxpy.mismatches])).toEqual([
      [0, "Fake GPU 0", "9.0", 0],
      [1, "Fake GPU 1", "9.0", 0],
    ]);
    expect(result.devices[0]!.saxpy.n).toBe(5000);
    expect(lib.live.size).toBe(0);
  });

  it("SAXPY's inputs are exact in float32, so GPU and CPU must agree bit for bit", () => {
    const { x, y } = saxpyInputs(4000);
    for (let i = 0; i < 4000; i++) {
      const exact = 2.5 * x[i]! + y[i]!;
      expect(Math.fround(exact)).toBe(exact);
    }
  });

  it.each([
    [{ fail: { cuInit: 100 } }, "cuInit failed: CUDA_ERROR_NO_DEVICE (100)"],
    [
      { fail: { cuMemAlloc_v2: 2 } },
      "GPU 0 (Fake GPU 0): cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2)",
    ],
    [
      { fail: { cuDevicePrimaryCtxRetain: 46 } },
      "GPU 0 (Fake GPU 0): cuDevicePrimaryCtxRetain failed: CUDA_ERROR_DEVICE_UNAVAILABLE (46)",
    ],
    [
      { fail: { cuMemcpyDtoH_v2: 214 } },
      "GPU 0 (Fake GPU 0): cuMemcpyDtoH_v2 failed: CUDA_ERROR_ECC_UNCORRECTABLE (214)",
    ],
    [
      { fail: { cuModuleLoadData: 222 } },
      "GPU 0 (Fake GPU 0): cuModuleLoadData failed: CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222)",
    ],
    [
      { fail: { cuLaunchKernel: 719 } },
      "GPU 0 (Fake GPU 0): cuLaunchKernel(saxpy) failed: CUDA_ERROR_LAUNCH_FAILED (719)",
    ],
    [
      { fail: { cuCtxSynchronize: 700 } },
      "GPU 0 (Fake GPU 0): cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)",
    ],
  ])("a failing driver call fails the check, naming the GPU and the CUDA error (%j)", (options, message) => {
    const lib = fakeCuda(options);
    expect(() => checkCuda(lib, SMALL)).toThrow(CudaError);
    expect(() => checkCuda(lib, SMALL)).toThrow(message);
    expect(lib.live.size).toBe(0);
  });

  it("the second GPU failing is named as the second GPU", () => {
    const lib = fakeCuda({ devices: 2, fail: { cuDevicePrimaryCtxRetain: 0 } });
    const retain = lib.cuDevicePrimaryCtxRetain;
    lib.cuDevicePrimaryCtxRetain = (out, device) => (device === 1 ? 46 : retain(out, device));
    expect(() => checkCuda(lib, SMALL)).toThrow("GPU 1 (Fake GPU 1): cuDevicePrimaryCtxRetain failed");
  });

  it("no CUDA device at all is a failure", () => {
    expect(() => checkCuda(fakeCuda({ devices: 0 }), SMALL)).toThrow(
      new GpuCheckError("No CUDA devices found (cuDeviceGetCount returned 0)"),
    );
  });

  it("memory that does not read back as written fails the check", () => {
    expect(() => checkCuda(fakeCuda({ corrupt: true }), SMALL)).toThrow(
      "GPU 0 (Fake GPU 0): memory readback mismatch: byte 32768 of 65536 is 0x5a, wrote 0xa5",
    );
  });

  it("a kernel whose result differs from the CPU's fails the check", () => {
    expect(() => checkCuda(fakeCuda({ wrong: true }), SMALL)).toThrow(
      "GPU 0 (Fake GPU 0): SAXPY result mismatch: 5000 of 5000 elements differ from the CPU (first at 0: GPU 1, CPU 0)",
    );
  });

  it("compute slower than RUNPOD_GPU_BENCHMARK_TIMEOUT fails the check", () => {
    let clock = 0;
    const lib = fakeCuda({ onLaunch: () => (clock += 2500) });
    expect(() => checkCuda(lib, { ...SMALL, now: () => clock })).toThrow(
      "GPU 0 (Fake GPU 0): GPU compute too slow: SAXPY took 2500ms (max: 2000ms)",
    );
  });

  it("runSaxpy reports each phase's time and the memory bandwidth", () => {
    let clock = 0;
    const tick = () => (clock += 1);
    const cuda = new Cuda(fakeCuda());
    const result = cuda.withContext(0, (context) => runSaxpy(context, 1000, 2.5, tick));
    cuda.close();
    expect(result.mismatches).toBe(0);
    expect(result.timings).toEqual({ moduleMs: 1, uploadMs: 1, kernelMs: 1, downloadMs: 1 });
    expect(result.gbPerSecond).toBeCloseTo((3 * 4000) / 1e-3 / 1e9, 9);
  });

  it("the defaults: 64 MiB readback, 1 Mi floats, 2 s", () => {
    expect(DEFAULT_CUDA_CHECK).toEqual({
      allocBytes: 64 * 1024 * 1024,
      saxpyLength: 1 << 20,
      benchmarkTimeoutMs: 2000,
    });
  });
});

describe("the GPU test process", () => {
  const node = (script: string) => [process.execPath, "-e", script];

  it("is killed at RUNPOD_GPU_TEST_TIMEOUT when a driver call hangs", async () => {
    const hung = runGpuProbe({ check: SMALL, timeoutMs: 300, command: node("setInterval(() => {}, 1000)") });
    await expect(hung).rejects.toThrow(new GpuCheckError("GPU test timed out after 0.3s"));
  });

  it("a process that dies without a result is a failure with its last words", async () => {
    const crash = runGpuProbe({
      check: SMALL,
      timeoutMs: 10_000,
      command: node("console.error('Segmentation fault in libcuda'); process.exit(3)"),
    });
    await expect(crash).rejects.toThrow(
      "GPU test process exited with code 3 without a result: Segmentation fault in libcuda",
    );
  });

  it("an error it reports keeps its name; a result it reports is returned", async () => {
    const error = {
      ok: false,
      error: { name: "CudaError", message: "cuInit failed: CUDA_ERROR_NO_DEVICE (100)" },
    };
    const failing = runGpuProbe({
      check: SMALL,
      timeoutMs: 10_000,
      command: node(`console.log(${JSON.stringify(JSON.stringify(error))})`),
    });
    await expect(failing).rejects.toMatchObject({
      name: "CudaError",
      message: "cuInit failed: CUDA_ERROR_NO_DEVICE (100)",
    });
    const answer = { ok: true, result: { cudaVersion: "13.0", devices: [] } };
    const passing = runGpuProbe({
      check: SMALL,
      timeoutMs: 10_000,
      command: node(`console.log(${JSON.stringify(JSON.stringify(answer))})`),
    });
    await expect(passing).resolves.toEqual(answer.result);
  });

  it("the options reach the process as its last argument", async () => {
    const echo =
      "const o = JSON.parse(process.argv.at(-1)); console.log(JSON.stringify({ ok: true, result: { cudaVersion: String(o.saxpyLength), devices: [] } }))";
    await expect(runGpuProbe({ check: SMALL, timeoutMs: 10_000, command: node(echo) })).resolves.toEqual({
      cudaVersion: "5000",
      devices: [],
    });
  });
});
