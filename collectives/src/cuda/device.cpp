// gj::cuda::device_count / is_device_pointer on the CUDA runtime. Both must work on machines
// without a GPU driver (CPU-only jobs load this library too): every error means "no device".
#include "device.h"

#include <cuda_runtime_api.h>

namespace gj::cuda {

namespace {

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

bool is_device_pointer(const void* p) noexcept {
  if (p == nullptr || device_count() == 0) return false;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}

}  // namespace gj::cuda
