// GPU tests skip (ctest SKIP_RETURN_CODE 77) with a stated reason when the machine has fewer
// CUDA devices than they need. Checked before MPI_Init, so a skipping rank never leaves MPI
// half-initialized.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gj::test {

inline constexpr int kSkip = 77;

// True (after printing why) when fewer than `needed` devices are visible. With
// NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL >= 2.30 runs several ranks on one GPU; the device check
// sets it only for such an NCCL) one device is enough.
// `needed` counts ranks; when the ranks are spread over nodes (GJ_EMU_RANKS_PER_NODE, the
// emulated cluster's placement: docs/gpu.md) a node needs devices for its own ranks only.
inline bool skip_without_devices(int needed, const char* test) {
  if (const char* per_node = std::getenv("GJ_EMU_RANKS_PER_NODE"); per_node != nullptr && std::atoi(per_node) > 0 &&
      std::atoi(per_node) < needed)
    needed = std::atoi(per_node);
  if (const char* v = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE"); v != nullptr && std::string(v) == "1") needed = 1;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    std::printf("SKIP %s: no usable CUDA device (cudaGetDeviceCount: %s); run on a GPU machine: bench/gpu/run.sh\n",
                test, cudaGetErrorString(err));
    (void)cudaGetLastError();
    return true;
  }
  if (n < needed) {
    std::printf("SKIP %s: needs %d CUDA devices (one per rank; NCCL rejects two ranks on one GPU), found %d (NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1 shares one)\n",
                test, needed, n);
    return true;
  }
  return false;
}

}  // namespace gj::test
