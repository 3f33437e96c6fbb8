// Grid-stride element-wise maps. When both pointers are 16-byte aligned each thread moves
// 16-byte vectors (8 halves, 4 floats, ...), otherwise one element at a time.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "../error.h"
#include "check.h"
#include "elementwise.h"
#include "elementwise_ops.h"
#include "launch_config.h"

namespace gj::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T, typename F>
__global__ void __launch_bounds__(kThreads) map_vec(const T* in, T* out, std::size_t nvec, F f) {
  constexpr int kPer = 16 / sizeof(T);
  const auto* vin = reinterpret_cast<const uint4*>(in);
  auto* vout = reinterpret_cast<uint4*>(out);
  for (std::size_t i = blockIdx.x * std::size_t{kThreads} + threadIdx.x; i < nvec;
       i += std::size_t{gridDim.x} * kThreads) {
    alignas(16) T e[kPer];
    *reinterpret_cast<uint4*>(e) = vin[i];
#pragma unroll
    for (int k = 0; k < kPer; ++k) e[k] = f(e[k]);
    vout[i] = *reinterpret_cast<const uint4*>(e);
  }
}

template <typename T, typename F>
__global__ void __launch_bounds__(kThreads) map_scalar(const T* in, T* out, std::size_t n, F f) {
  for (std::size_t i = blockIdx.x * std::size_t{kThreads} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * kThreads) {
    out[i] = f(in[i]);
  }
}

template <typename T, typename F>
void map(const void* in_v, void* out_v, std::size_t count, F f, cudaStream_t stream, const char* what) {
  if (count == 0) return;
  const auto* in = static_cast<const T*>(in_v);
  auto* out = static_cast<T*>(out_v);
  constexpr std::size_t kPer = 16 / sizeof(T);
  std::size_t head = 0;
  if ((reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out)) % 16 == 0) {
    const std::size_t nvec = count / kPer;
    if (nvec > 0) {
      map_vec<T><<<blocks_for_items(nvec, kThreads), kThreads, 0, stream>>>(in, out, nvec, f);
      check(cudaGetLastError(), std::string(what) + "<<<vec>>>(count=" + std::to_string(count) + ")");
    }
    head = nvec * kPer;
  }
  if (head < count) {
    map_scalar<T><<<blocks_for_items(count - head, kThreads), kThreads, 0, stream>>>(in + head, out + head,
                                                                              count - head, f);
    check(cudaGetLastError(), std::string(what) + "<<<scalar>>>(count=" + std::to_string(count - head) + ")");
  }
}

// Launches map<T> over (in, out, count) on the stream for dispatch_scale / dispatch_divide.
struct Launch {
  const void* in;
  void* out;
  std::size_t count;
  cudaStream_t stream;
  template <typename T, typename F>
  void run(F f, const char* what) const {
    map<T>(in, out, count, f, stream, what);
  }
};

}  // namespace

void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double factor, void* stream) {
  dispatch_scale(dtype, factor, Launch{in, out, count, static_cast<cudaStream_t>(stream)});
}

void divide(void* buf, std::size_t count, gjDataType_t dtype, int divisor, void* stream) {
  dispatch_divide(dtype, divisor, Launch{buf, buf, count, static_cast<cudaStream_t>(stream)});
}

}  // namespace gj::cuda
