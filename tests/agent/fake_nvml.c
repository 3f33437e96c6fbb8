/* A stand-in for the driver's NVML (libnvidia-ml.so.1) for the GPU pre-flight probe's tests
 * (binary_tests.py preflight_facts): the calls gj-mpirun's probe makes (sys/gpu_probe.cpp), over
 * devices the environment describes: FAKE_NVML_COUNT devices (default 8), FAKE_NVML_LOST an index
 * whose handle fails with NVML_ERROR_GPU_IS_LOST (15), FAKE_NVML_ECC "<index>:<count>" uncorrected
 * volatile ECC errors on one device, FAKE_NVML_INIT_ERROR a status nvmlInit_v2 returns (a node
 * whose driver does not answer). For the per-rank GPU series (`gj-mpirun --gpu-use PID`):
 * nvmlDeviceGetComputeRunningProcesses_v3 lists, on device 0, one process per file in the folder
 * FAKE_NVML_PROCS named by its pid and holding its used bytes; nvmlDeviceGetUtilizationRates says
 * FAKE_NVML_UTIL percent (default 0) on every device. Like the real one, it refuses every call before nvmlInit. A test
 * double: nothing it answers says the real NVML behaves so (docs/gpu.md). */
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct fake_device* nvmlDevice_t;
typedef struct {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

struct fake_device { unsigned index; };
static struct fake_device devices[64];
static int initialised;

static int env_int(const char* name, int fallback) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : fallback;
}

static unsigned count(void) {
  int n = env_int("FAKE_NVML_COUNT", 8);
  return n < 0 ? 0u : (n > 64 ? 64u : (unsigned)n);
}

nvmlReturn_t nvmlInit_v2(void) {
  int e = env_int("FAKE_NVML_INIT_ERROR", 0);
  if (e != 0) return e;
  initialised = 1;
  return 0;
}

nvmlReturn_t nvmlShutdown(void) {
  initialised = 0;
  return 0;
}

const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case 1: return "Uninitialized";
    case 9: return "Driver Not Loaded";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  if (!initialised) return 1;
  *n = count();
  return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* h) {
  if (!initialised) return 1;
  if (i >= count()) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  if (getenv("FAKE_NVML_LOST") && (unsigned)env_int("FAKE_NVML_LOST", -1) == i) return 15;
  devices[i].index = i;
  *h = &devices[i];
  return 0;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char* out, unsigned len) {
  snprintf(out, len, "NVIDIA H100 80GB HBM3");
  return h ? 0 : 2;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char* out, unsigned len) {
  snprintf(out, len, "GPU-fa4e0000-0000-0000-0000-00000000000%u", h->index);
  return 0;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t* pci) {
  memset(pci, 0, sizeof *pci);
  pci->bus = 0x18 + h->index;
  snprintf(pci->busId, sizeof pci->busId, "00000000:%02X:00.0", pci->bus);
  return 0;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t h, int type, int counter, unsigned long long* out) {
  const char* ecc = getenv("FAKE_NVML_ECC");
  unsigned idx = 0;
  unsigned long long n = 0;
  if (type != 1 || counter != 0) return 3; /* NVML_ERROR_NOT_SUPPORTED */
  *out = 0;
  if (ecc && sscanf(ecc, "%u:%llu", &idx, &n) == 2 && idx == h->index) *out = n;
  return 0;
}

typedef struct {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned* n, nvmlProcessInfo_t* out) {
  const char* dir = getenv("FAKE_NVML_PROCS");
  unsigned have = 0;
  DIR* d;
  struct dirent* e;
  if (!initialised) return 1;
  if (h->index != 0 || !dir || !(d = opendir(dir))) {
    *n = 0;
    return 0;
  }
  while ((e = readdir(d)) != NULL) {
    char path[4096];
    unsigned long long bytes = 0;
    FILE* f;
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    if (fscanf(f, "%llu", &bytes) != 1) bytes = 0;
    fclose(f);
    if (have < *n) {
      out[have].pid = (unsigned)atoi(e->d_name);
      out[have].usedGpuMemory = bytes;
      out[have].gpuInstanceId = out[have].computeInstanceId = 0xffffffffu;
    }
    ++have;
  }
  closedir(d);
  if (have > *n) {
    *n = have;
    return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  }
  *n = have;
  return 0;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t* u) {
  if (!initialised || !h) return 1;
  u->gpu = (unsigned)env_int("FAKE_NVML_UTIL", 0);
  u->memory = 0;
  return 0;
}
