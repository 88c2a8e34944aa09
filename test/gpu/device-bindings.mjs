// Device check, part 2: the real koffi bindings through the package's own GPU module: NVML inventory,
// cuInit, a 1 GiB allocation written and read back, SAXPY on 16 Mi floats against the CPU, 100 timed
// launches, and real CUDA failures (an impossible allocation, broken PTX). Prints one JSON object.
// usage: node device-bindings.mjs <flash-worker package dir>
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.argv[2];
const load = (file) => import(pathToFileURL(join(dir, "dist", file)).href);
const { readGpuFacts } = await load("gpu/facts.js");
const { Cuda, pointerParam } = await load("gpu/cuda.js");
const { runSaxpy, SAXPY_PTX } = await load("gpu/saxpy.js");
const { checkCuda, DEFAULT_CUDA_CHECK } = await load("gpu/check.js");
const { loadCuda } = await load("gpu/ffi.js");

const report = { checks: [] };
const ok = (name, pass, detail) => report.checks.push({ name, pass, ...detail });
const time = (fn) => {
  const t = performance.now();
  const value = fn();
  return [value, performance.now() - t];
};

let t = performance.now();
const facts = await readGpuFacts();
report.nvml = { ms: performance.now() - t, facts };
ok("nvml inventory lists at least one GPU", facts.state === "ok" && facts.inventory.gpus.length > 0, {});

t = performance.now();
const lib = await loadCuda();
const cuda = new Cuda(lib);
report.cuInitMs = performance.now() - t;
report.cudaVersion = cuda.driverVersion();
report.devices = Array.from({ length: cuda.deviceCount() }, (_, i) => cuda.device(i));

cuda.withContext(0, (context) => {
  const GIB = 1024 ** 3;
  const [buffer, allocMs] = time(() => context.alloc(GIB));
  const [, fillMs] = time(() => context.fill(buffer, 0x5a));
  const back = new Uint8Array(GIB);
  const [, readMs] = time(() => context.download(buffer, back));
  const wrong = Buffer.from(back.buffer).equals(Buffer.alloc(GIB, 0x5a))
    ? -1
    : back.findIndex((b) => b !== 0x5a);
  context.free(buffer);
  ok("1 GiB allocation, memset, readback", wrong === -1, { allocMs, fillMs, readMs, firstWrong: wrong });

  const runs = [0, 1].map(() => runSaxpy(context, 16 * 1024 * 1024, 2.5));
  ok(
    "SAXPY 16 Mi floats matches the CPU (twice: JIT, then cache)",
    runs.every((r) => r.mismatches === 0),
    {
      runs: runs.map((r) => ({ mismatches: r.mismatches, timings: r.timings, gbPerSecond: r.gbPerSecond })),
    },
  );

  // 100 launches on resident buffers: the per-launch time of the kernel alone.
  const n = 16 * 1024 * 1024;
  const kernel = context.kernel(SAXPY_PTX, "saxpy");
  const x = context.alloc(n * 4);
  const y = context.alloc(n * 4);
  context.fill(x, 0);
  context.fill(y, 0);
  const params = [pointerParam(x), pointerParam(y), new Float32Array([1]), new Uint32Array([n])];
  context.launch(kernel, { x: n / 256 }, { x: 256 }, params);
  context.synchronize();
  const [, ms] = time(() => {
    for (let i = 0; i < 100; i++) context.launch(kernel, { x: n / 256 }, { x: 256 }, params);
    context.synchronize();
  });
  ok("100 SAXPY launches", true, { msPerLaunch: ms / 100, tbPerSecond: (12 * n) / (ms / 100 / 1000) / 1e12 });

  try {
    context.alloc(2 ** 50);
    ok("a 1 PiB allocation fails with CUDA_ERROR_OUT_OF_MEMORY", false, {});
  } catch (err) {
    ok("a 1 PiB allocation fails with CUDA_ERROR_OUT_OF_MEMORY", /OUT_OF_MEMORY/.test(err.message), {
      error: `${err.name}: ${err.message}`,
    });
  }
  try {
    context.kernel(SAXPY_PTX.replace("fma.rn.f32", "fma.bogus.f32"), "saxpy");
    ok("broken PTX is refused", false, {});
  } catch (err) {
    ok("broken PTX is refused", err.name === "CudaError", { error: `${err.name}: ${err.message}` });
  }
});
cuda.close();

t = performance.now();
report.healthCheck = checkCuda(lib, DEFAULT_CUDA_CHECK);
report.healthCheckMs = performance.now() - t;
ok("health check passes on every GPU", report.healthCheck.devices.length === report.devices.length, {});
report.pass = report.checks.every((c) => c.pass);
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
