// A stand-in for the NVIDIA driver's libnvidia-ml.so.1 and libcuda.so.1 on hosts without a GPU: device
// memory is host memory and the "saxpy" kernel runs on the CPU, so the real koffi bindings can be tested.
// Faults come from the environment: FAKE_GPU_FAIL=<call>:<code>, FAKE_GPU_HANG=<call>,
// FAKE_GPU_CORRUPT=1 (memset writes a wrong byte), FAKE_GPU_WRONG=1 (saxpy adds 1), FAKE_GPU_COUNT=<n>.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fault(const char *call) {
  const char *hang = getenv("FAKE_GPU_HANG");
  if (hang && strcmp(hang, call) == 0)
    for (;;) pause();
  const char *fail = getenv("FAKE_GPU_FAIL");
  if (!fail) return 0;
  const char *colon = strchr(fail, ':');
  size_t len = colon ? (size_t)(colon - fail) : strlen(fail);
  if (len != strlen(call) || strncmp(fail, call, len) != 0) return 0;
  return colon ? atoi(colon + 1) : 999;
}

static unsigned count(void) {
  const char *n = getenv("FAKE_GPU_COUNT");
  return n ? (unsigned)atoi(n) : 2;
}

static void text(char *out, unsigned length, const char *value) {
  if (length == 0) return;
  strncpy(out, value, length - 1);
  out[length - 1] = 0;
}

/* ---- NVML ---- */
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
static int devices[8];

int nvmlInit_v2(void) { return fault("nvmlInit_v2"); }
int nvmlShutdown(void) { return 0; }
int nvmlSystemGetDriverVersion(char *version, unsigned length) {
  int rc = fault("nvmlSystemGetDriverVersion");
  if (!rc) text(version, length, "580.159.04");
  return rc;
}
int nvmlSystemGetCudaDriverVersion_v2(int *version) {
  int rc = fault("nvmlSystemGetCudaDriverVersion_v2");
  const char *v = getenv("FAKE_GPU_CUDA_VERSION");
  if (!rc) *version = v ? atoi(v) : 13000;
  return rc;
}
int nvmlDeviceGetCount_v2(unsigned *n) {
  int rc = fault("nvmlDeviceGetCount_v2");
  if (!rc) *n = count();
  return rc;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device) {
  int rc = fault("nvmlDeviceGetHandleByIndex_v2");
  if (!rc) *device = &devices[index % 8];
  return rc;
}
static unsigned indexOf(void *device) { return (unsigned)((int *)device - devices); }
int nvmlDeviceGetName(void *device, char *name, unsigned length) {
  int rc = fault("nvmlDeviceGetName");
  if (!rc) text(name, length, indexOf(device) == 0 ? "Fake GPU Zero" : "Fake GPU One");
  return rc;
}
int nvmlDeviceGetUUID(void *device, char *uuid, unsigned length) {
  int rc = fault("nvmlDeviceGetUUID");
  if (!rc) text(uuid, length, indexOf(device) == 0 ? "GPU-00000000-fake" : "GPU-11111111-fake");
  return rc;
}
int nvmlDeviceGetMemoryInfo(void *device, nvmlMemory_t *memory) {
  int rc = fault("nvmlDeviceGetMemoryInfo");
  if (rc) return rc;
  memory->total = 150754820096ULL + indexOf(device);
  memory->free = 149000000000ULL;
  memory->used = memory->total - memory->free;
  return 0;
}
int nvmlDeviceGetTemperature(void *device, int sensor, unsigned *celsius) {
  int rc = fault("nvmlDeviceGetTemperature");
  if (!rc) *celsius = 30 + indexOf(device) + (unsigned)sensor;
  return rc;
}

/* ---- CUDA driver API ---- */
static int module_token, function_token, context_tokens[8];
static int current = -1;

int cuInit(unsigned flags) { return flags ? 1 : fault("cuInit"); }
int cuDriverGetVersion(int *version) {
  int rc = fault("cuDriverGetVersion");
  if (!rc) *version = 13000;
  return rc;
}
int cuDeviceGetCount(int *n) {
  int rc = fault("cuDeviceGetCount");
  if (!rc) *n = (int)count();
  return rc;
}
int cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || (unsigned)ordinal >= count()) return 101;
  *device = ordinal;
  return 0;
}
int cuDeviceGetName(char *name, int length, int device) {
  text(name, (unsigned)length, device == 0 ? "Fake GPU Zero" : "Fake GPU One");
  return 0;
}
int cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  *value = attribute == 75 ? 9 : 0;
  return 0;
}
int cuDevicePrimaryCtxRetain(void **context, int device) {
  int rc = fault("cuDevicePrimaryCtxRetain");
  if (!rc) *context = &context_tokens[device % 8];
  return rc;
}
int cuDevicePrimaryCtxRelease_v2(int device) { (void)device; return 0; }
int cuCtxSetCurrent(void *context) {
  current = context ? (int)((int *)context - context_tokens) : -1;
  return 0;
}
int cuCtxSynchronize(void) { return current < 0 ? 201 : fault("cuCtxSynchronize"); }
int cuMemAlloc_v2(uint64_t *pointer, size_t bytes) {
  if (current < 0) return 201;
  int rc = fault("cuMemAlloc_v2");
  if (rc) return rc;
  void *memory = malloc(bytes);
  if (!memory) return 2;
  *pointer = (uint64_t)(uintptr_t)memory;
  return 0;
}
int cuMemFree_v2(uint64_t pointer) {
  free((void *)(uintptr_t)pointer);
  return 0;
}
int cuMemsetD8_v2(uint64_t pointer, uint8_t value, size_t count) {
  int rc = fault("cuMemsetD8_v2");
  if (rc) return rc;
  memset((void *)(uintptr_t)pointer, value, count);
  if (getenv("FAKE_GPU_CORRUPT") && count > 4096) ((uint8_t *)(uintptr_t)pointer)[4096] ^= 0xff;
  return 0;
}
int cuMemcpyHtoD_v2(uint64_t destination, const void *source, size_t bytes) {
  int rc = fault("cuMemcpyHtoD_v2");
  if (!rc) memcpy((void *)(uintptr_t)destination, source, bytes);
  return rc;
}
int cuMemcpyDtoH_v2(void *destination, uint64_t source, size_t bytes) {
  int rc = fault("cuMemcpyDtoH_v2");
  if (!rc) memcpy(destination, (const void *)(uintptr_t)source, bytes);
  return rc;
}
int cuModuleLoadData(void **module, const char *image) {
  int rc = fault("cuModuleLoadData");
  if (rc) return rc;
  if (!strstr(image, ".entry saxpy") || !strstr(image, ".target sm_52")) return 218;
  *module = &module_token;
  return 0;
}
int cuModuleUnload(void *module) { return module == &module_token ? 0 : 400; }
int cuModuleGetFunction(void **fn, void *module, const char *name) {
  if (module != &module_token) return 400;
  if (strcmp(name, "saxpy") != 0) return 500;
  *fn = &function_token;
  return 0;
}
int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned shared, void *stream, void **params, void **extra) {
  (void)gy; (void)gz; (void)by; (void)bz; (void)shared; (void)stream;
  if (fn != &function_token || extra) return 400;
  int rc = fault("cuLaunchKernel");
  if (rc) return rc;
  float *x = (float *)(uintptr_t)*(uint64_t *)params[0];
  float *y = (float *)(uintptr_t)*(uint64_t *)params[1];
  float a = *(float *)params[2];
  uint32_t n = *(uint32_t *)params[3];
  float wrong = getenv("FAKE_GPU_WRONG") ? 1.0f : 0.0f;
  for (uint64_t i = 0; i < (uint64_t)gx * bx && i < n; i++) y[i] = fmaf(a, x[i], y[i]) + wrong;
  return 0;
}
