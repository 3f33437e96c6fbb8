// Turns a failed CUDA runtime call into gj::Error(gjCudaError) naming the call and its arguments:
//   check(cudaMemcpyAsync(dst, src, n, kind, s), "cudaMemcpyAsync(bytes=" + std::to_string(n) + ")");
// -> "cudaMemcpyAsync(bytes=4096): an illegal memory access was encountered (cudaErrorIllegalAddress)"
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "../error.h"

namespace gj::cuda {

// The runtime also keeps a failed call's error as the thread's last error: it is cleared here,
// so the next launch check (cudaGetLastError after a kernel launch) does not report it again.
[[noreturn]] inline void throw_cuda_error(cudaError_t err, const std::string& call) {
  (void)cudaGetLastError();
  throw Error(gjCudaError, call + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")");
}

inline void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw_cuda_error(err, call);
}

inline void check(cudaError_t err, const std::string& call) {
  if (err != cudaSuccess) throw_cuda_error(err, call);
}

}  // namespace gj::cuda
