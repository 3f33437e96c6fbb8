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
