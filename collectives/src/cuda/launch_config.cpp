#include "launch_config.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>

#include "check.h"

namespace gj::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<int> g_sm_count[kMaxDevices];  // 0 = not asked yet

int sm_count() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  if (dev < 0 || dev >= kMaxDevices) dev = 0;
  int n = g_sm_count[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    check(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev),
          "cudaDeviceGetAttribute(cudaDevAttrMultiProcessorCount)");
    g_sm_count[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace

unsigned grid_size(std::uint64_t work_items, int threads_per_block) {
  // 2048 resident threads per SM on Ampere and Hopper.
  const std::uint64_t per_sm = std::max(1, 2048 / threads_per_block);
  const std::uint64_t full = static_cast<std::uint64_t>(sm_count()) * per_sm;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(work_items, full)));
}

}  // namespace gj::cuda
