// gj::cuda::device_count / is_device_pointer on the CUDA runtime. Both must work on machines
// without a GPU driver (CPU-only jobs load this library too): device_count() treats every error
// as "no device", and pointers are asked about only when a device exists.
//
// Contexts: the runtime creates the current device's primary context for any call that needs
// one, cudaPointerGetAttributes included (even on host memory), and cudaSetDevice since CUDA 12.
// Asked before a script's torch.cuda.set_device, that puts a context of every rank on device 0
// (memory, and a failure in EXCLUSIVE_PROCESS mode). So pointers are asked about through the
// driver's cuPointerGetAttribute (unified addressing: no context needed), and a device is made
// current again only where it already has a context (cuDevicePrimaryCtxGetState).
#include "device.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "../error.h"

namespace gj::cuda {

namespace {

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// A driver function through the runtime (no link against libcuda), nullptr where unavailable.
template <typename F>
F driver_function(const char* name) noexcept {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F>(fn);
}

using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
using PrimaryCtxGetState = CUresult (*)(CUdevice, unsigned int*, int*);

PointerGetAttribute pointer_get_attribute() noexcept {
  static const PointerGetAttribute fn = driver_function<PointerGetAttribute>("cuPointerGetAttribute");
  return fn;
}

// What the library's own CUDA runtime (linked statically, CUDART_VERSION) found at its first
// use: the device count and, where it found none, why, with both versions for the message.
struct RuntimeState {
  int count = 0;
  cudaError_t error = cudaSuccess;
  int runtime_version = CUDART_VERSION;
  int driver_version = 0;  // the driver's CUDA version (12040 = 12.4); 0: no driver loadable
};

RuntimeState query_runtime() noexcept {
  RuntimeState s;
  if (const cudaError_t e = cudaGetDeviceCount(&s.count); e != cudaSuccess) {
    // cudaErrorNoDevice / cudaErrorInsufficientDriver / cudaErrorInitializationError: none usable.
    // Clear the error so the next runtime call in this thread does not report it.
    (void)cudaGetLastError();
    s.count = 0;
    s.error = e;
  }
  // Both answer without initializing the runtime; the driver's is 0 where no libcuda loads.
  if (cudaDriverGetVersion(&s.driver_version) != cudaSuccess) s.driver_version = 0;
  if (cudaRuntimeGetVersion(&s.runtime_version) != cudaSuccess) s.runtime_version = CUDART_VERSION;
  (void)cudaGetLastError();
  return s;
}

// Cached once per process: devices do not appear while a job runs, and cudaGetDeviceCount
// on every collective was a measurable part of the per-call cost of small host allreduces
// (docs/benchmarks.md). A function-local static is initialized once, thread-safely.
const RuntimeState& runtime() noexcept {
  static const RuntimeState s = query_runtime();
  return s;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The runtime failed although a driver is installed: the runtime cannot use it (an older
// driver than the toolkit the library was built with, cudaErrorInsufficientDriver, or a
// broken installation). Device memory may still exist in the process: another CUDA runtime
// (e.g. torch's cu12 build) runs on that driver.
bool runtime_cannot_use_driver() noexcept {
  const RuntimeState& s = runtime();
  return s.count == 0 && s.error != cudaSuccess && s.error != cudaErrorNoDevice && s.driver_version > 0;
}

std::string mismatch_text() {
  const RuntimeState& s = runtime();
  std::string text = "this library's CUDA runtime " + version_text(s.runtime_version) +
                     " (linked into libgj_collectives) cannot use the installed NVIDIA driver, which supports "
                     "CUDA up to " + version_text(s.driver_version) + " (cudaGetDeviceCount: " +
                     cudaGetErrorName(s.error) + ")";
  if (s.driver_version < s.runtime_version) {
    text += ". Fix: install an NVIDIA driver for CUDA " + version_text(s.runtime_version) +
            " or newer, or use a gj built with a CUDA toolkit no newer than " + version_text(s.driver_version) +
            " (the driver's; cmake -DCMAKE_CUDA_COMPILER=<that toolkit>/bin/nvcc), or pass host (CPU) buffers";
  } else {
    text += ". Fix: check the driver installation (nvidia-smi; a CUDA forward-compatibility package, if one "
            "is installed, must match the driver), or pass host (CPU) buffers";
  }
  return text;
}

// The driver's own pointer query where the runtime cannot answer. Device memory needs the
// driver loaded in the process (by whatever runtime allocated it): RTLD_NOLOAD, so a process
// that never loaded it (no device memory anywhere) loads nothing here.
PointerGetAttribute loaded_driver_pointer_query() noexcept {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (driver == nullptr) return nullptr;
  return reinterpret_cast<PointerGetAttribute>(dlsym(driver, "cuPointerGetAttribute"));
}

// Where the runtime cannot use the driver: -1 for memory the driver does not know (host
// memory), else throws gjCudaError naming the version mismatch and the fix. Never "host" for
// memory the driver calls device memory: the host backend would read it on the CPU (a crash).
int pointer_device_without_runtime(const void* p) {
  const PointerGetAttribute get = loaded_driver_pointer_query();
  if (get == nullptr) return -1;  // no driver in the process: nothing allocated device memory
  unsigned int type = 0;
  const CUresult r = get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p));
  // Unknown to the driver (unified addressing), or the driver never initialized: host memory.
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_INITIALIZED) return -1;
  if (r == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST) return -1;
  const std::string what = r == CUDA_SUCCESS ? " is CUDA device memory, but "
                                             : " cannot be classified (the driver's cuPointerGetAttribute returned " +
                                                   std::to_string(static_cast<int>(r)) + "), and ";
  throw Error(gjCudaError, "buffer " + pointer_text(p) + what + mismatch_text());
}

}  // namespace

int device_count() noexcept { return runtime().count; }

std::string device_problem() { return runtime_cannot_use_driver() ? mismatch_text() : std::string(); }

int pointer_device(const void* p) {
  if (p == nullptr) return -1;
  if (device_count() == 0) return runtime_cannot_use_driver() ? pointer_device_without_runtime(p) : -1;
  if (const PointerGetAttribute get = pointer_get_attribute(); get != nullptr) {
    const auto ptr = reinterpret_cast<CUdeviceptr>(p);
    unsigned int type = 0;
    const CUresult r = get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
    // Memory no context allocated or registered: plain host memory.
    if (r == CUDA_ERROR_INVALID_VALUE) return -1;
    if (r == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST) return -1;
    int ordinal = -1;
    if (r == CUDA_SUCCESS && (type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_UNIFIED) &&
        get(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) == CUDA_SUCCESS) {
      return ordinal;
    }
    // Anything else (no driver context at all, an old driver): the runtime's query below.
  }
  cudaPointerAttributes attr{};
  // Host memory unknown to CUDA is cudaSuccess with cudaMemoryTypeUnregistered (CUDA >= 11):
  // an error here is a real failure (a broken context, a driver fault).
  if (const cudaError_t e = cudaPointerGetAttributes(&attr, p); e != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(gjCudaError, std::string("cudaPointerGetAttributes(") + pointer_text(p) + "): " +
                                 cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + ")");
  }
  const bool device = attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
  return device ? attr.device : -1;
}

bool is_device_pointer(const void* p) { return pointer_device(p) >= 0; }

int current_device() noexcept {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return d;
}

bool has_context(int device) noexcept {
  static const PrimaryCtxGetState fn = driver_function<PrimaryCtxGetState>("cuDevicePrimaryCtxGetState");
  if (fn == nullptr) return true;  // cannot tell: behave as the runtime would
  unsigned int flags = 0;
  int active = 0;
  return fn(static_cast<CUdevice>(device), &flags, &active) != CUDA_SUCCESS || active != 0;
}

}  // namespace gj::cuda
