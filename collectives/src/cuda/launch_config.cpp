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

unsigned plan_blocks(std::uint64_t blocks_wanted, int threads_per_block, int sm_count) {
  const std::uint64_t per_sm = static_cast<std::uint64_t>(std::max(1, 2048 / std::max(1, threads_per_block)));
  const std::uint64_t full = static_cast<std::uint64_t>(std::max(1, sm_count)) * per_sm;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(blocks_wanted, full)));
}

unsigned blocks_for_items(std::uint64_t items, int threads_per_block) {
  const auto t = static_cast<std::uint64_t>(std::max(1, threads_per_block));
  return plan_blocks((items + t - 1) / t, threads_per_block, sm_count());
}

unsigned blocks_for_blocks(std::uint64_t blocks, int threads_per_block) {
  return plan_blocks(blocks, threads_per_block, sm_count());
}

}  // namespace gj::cuda
