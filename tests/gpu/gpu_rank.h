// One rank of a GPU test or benchmark: this rank's device made current (local rank % devices),
// the world communicator through the public API, and which backend device buffers use.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <string>

#include "gj/collectives.h"

namespace gj::test {

struct GpuRank {
  gjComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  int device = 0;
  gjBackend_t device_backend = gjBackendMpi;
};

// This process's rank on its node as the launcher tells it (Open MPI, MPICH/hydra, Slurm), 0
// when none does: the device must be chosen before the communicator exists.
inline int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 0;
}

// Returns "" on success, else the failed call and its error. The device (local rank % devices;
// several ranks share one GPU when NCCL_MULTI_RANK_GPU_ENABLE=1 allows it) is made current
// first: the communicator's NCCL runs on the caller's current device.
inline std::string open_gpu_rank(GpuRank& r) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return "cudaGetDeviceCount: no device";
  r.device = launcher_local_rank() % devices;
  if (cudaError_t c = cudaSetDevice(r.device); c != cudaSuccess) {
    return "cudaSetDevice(" + std::to_string(r.device) + "): " + cudaGetErrorString(c);
  }
  if (gjResult_t e = gjCommInitWorld(&r.comm); e != gjSuccess) {
    return std::string("gjCommInitWorld: ") + gjGetErrorString(e) + ": " + gjGetLastError(nullptr);
  }
  gjResult_t e = gjCommRank(r.comm, &r.rank);
  if (e == gjSuccess) e = gjCommSize(r.comm, &r.size);
  if (e == gjSuccess) e = gjCommBackend(r.comm, 1, &r.device_backend);
  if (e != gjSuccess) return std::string("gjComm queries: ") + gjGetErrorString(e) + ": " + gjGetLastError(r.comm);
  return "";
}

}  // namespace gj::test
