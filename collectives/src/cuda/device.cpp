// gj::cuda::device_count / is_device_pointer on the CUDA runtime. Both must work on machines
// without a GPU driver (CPU-only jobs load this library too): device_count() treats every error
// as "no device", and pointers are asked about only when a device exists.
#include "device.h"

#include <cuda_runtime_api.h>

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

int query_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    // cudaErrorNoDevice / cudaErrorInsufficientDriver / cudaErrorInitializationError: none usable.
    // Clear the error so the next runtime call in this thread does not report it.
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

}  // namespace

// Cached once per process: devices do not appear while a job runs, and cudaGetDeviceCount
// on every collective was a measurable part of the per-call cost of small host allreduces
// (docs/benchmarks.md). A function-local static is initialized once, thread-safely.
int device_count() noexcept {
  static const int n = query_device_count();
  return n;
}

int pointer_device(const void* p) {
  if (p == nullptr || device_count() == 0) return -1;
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

}  // namespace gj::cuda
