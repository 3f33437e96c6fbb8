// Turns a failed CUDA runtime call into gj::Error(gjCudaError) naming the call and its arguments:
//   GJ_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, kind, s), "cudaMemcpyAsync(bytes=" + std::to_string(n) + ")");
// -> "cudaMemcpyAsync(bytes=4096): an illegal memory access was encountered (cudaErrorIllegalAddress)"
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "../error.h"

namespace gj::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const std::string& call) {
  throw Error(gjCudaError, call + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")");
}

inline void check(cudaError_t err, const char* call) {
  if (err != cudaSuccess) throw_cuda_error(err, call);
}

inline void check(cudaError_t err, const std::string& call) {
  if (err != cudaSuccess) throw_cuda_error(err, call);
}

}  // namespace gj::cuda
