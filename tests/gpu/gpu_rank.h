// One rank of a GPU test or benchmark: the world communicator through the public API, this
// rank's device made current (local rank % devices), and which backend device buffers use.
#pragma once

#include <cuda_runtime_api.h>

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

// Returns "" on success, else the failed call and its error.
inline std::string open_gpu_rank(GpuRank& r) {
  if (gjResult_t e = gjCommInitWorld(&r.comm); e != gjSuccess) {
    return std::string("gjCommInitWorld: ") + gjGetErrorString(e) + ": " + gjGetLastError(nullptr);
  }
  int local = 0, devices = 0;
  gjResult_t e = gjCommRank(r.comm, &r.rank);
  if (e == gjSuccess) e = gjCommSize(r.comm, &r.size);
  if (e == gjSuccess) e = gjCommLocalRank(r.comm, &local);
  if (e == gjSuccess) e = gjCommBackend(r.comm, 1, &r.device_backend);
  if (e != gjSuccess) return std::string("gjComm queries: ") + gjGetErrorString(e) + ": " + gjGetLastError(r.comm);
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return "cudaGetDeviceCount: no device";
  r.device = local % devices;
  if (cudaError_t c = cudaSetDevice(r.device); c != cudaSuccess) {
    return "cudaSetDevice(" + std::to_string(r.device) + "): " + cudaGetErrorString(c);
  }
  return "";
}

}  // namespace gj::test
