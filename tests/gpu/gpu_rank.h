// One rank of a GPU test or benchmark: the rank count asked for, this rank's device made current
// (local rank % devices), and either MPI alone (tests of the NCCL backend itself) or the world
// communicator through the public API with the backend device buffers use.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "device_skip.h"
#include "gj/collectives.h"

namespace gj::test {

// "--ranks N": the rank count ctest starts, known before MPI_Init so that a machine with fewer
// devices skips (skip_without_devices) without starting MPI. 0 after printing the usage.
inline int ranks_option(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--ranks") != 0) {
    std::fprintf(stderr, "usage: mpiexec -np N %s --ranks N\n", argv[0]);
    return 0;
  }
  return std::atoi(argv[2]);
}

// This process's rank on its node as the launcher tells it (Open MPI, MPICH/hydra, Slurm), 0
// when none does: the device must be chosen before the communicator exists.
// Under the emulated cluster (GJ_EMU_RANKS_PER_NODE) the node is the launcher's rank divided by
// that count, as the emulated device runtime places it.
inline int launcher_local_rank() {
  if (const char* per_node = std::getenv("GJ_EMU_RANKS_PER_NODE"); per_node != nullptr && std::atoi(per_node) > 0) {
    for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
      if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::atoi(v) % std::atoi(per_node);
    }
  }
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 0;
}

// Makes this rank's device current: local rank % devices (several ranks share one GPU when
// NCCL_MULTI_RANK_GPU_ENABLE=1 allows it); NCCL runs on the caller's current device. Returns ""
// on success, else the failed call and its error.
inline std::string use_local_device(int& device) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return "cudaGetDeviceCount: no device";
  device = launcher_local_rank() % devices;
  if (cudaError_t c = cudaSetDevice(device); c != cudaSuccess) {
    return "cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(c);
  }
  return "";
}

// The calling thread's current device (the one use_local_device made current).
inline int current_device() {
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) throw std::runtime_error("cudaGetDevice failed");
  return d;
}

// A test of the NCCL backend itself (no public API): MPI initialized, then this rank's device
// made current. Throws naming the failed call.
struct MpiRank {
  int rank = 0;
  int size = 1;
  int device = 0;
};
inline MpiRank init_mpi_rank() {
  MPI_Init(nullptr, nullptr);
  MpiRank r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.size);
  if (const std::string err = use_local_device(r.device); !err.empty()) throw std::runtime_error(err);
  return r;
}

struct GpuRank {
  gjComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  int device = 0;
  gjBackend_t device_backend = gjBackendMpi;
};

// Returns "" on success, else the failed call and its error. The device is made current first
// (use_local_device): the communicator's NCCL runs on the caller's current device.
inline std::string open_gpu_rank(GpuRank& r) {
  if (std::string err = use_local_device(r.device); !err.empty()) return err;
  if (gjResult_t e = gjCommInitWorld(&r.comm); e != gjSuccess) {
    return std::string("gjCommInitWorld: ") + gjGetErrorString(e) + ": " + gjGetLastError(nullptr);
  }
  gjResult_t e = gjCommRank(r.comm, &r.rank);
  if (e == gjSuccess) e = gjCommSize(r.comm, &r.size);
  if (e == gjSuccess) e = gjCommBackend(r.comm, 1, &r.device_backend);
  if (e != gjSuccess) return std::string("gjComm queries: ") + gjGetErrorString(e) + ": " + gjGetLastError(r.comm);
  return "";
}

// open_gpu_rank, or "<who>: <error>" on stderr and exit 1.
inline GpuRank open_gpu_rank_or_exit(const char* who) {
  GpuRank r;
  if (const std::string err = open_gpu_rank(r); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", who, err.c_str());
    std::exit(1);
  }
  return r;
}

// The start of a test through the public API, run as "mpiexec -np N <test> --ranks N": exits 2
// on a bad command line, kSkip when fewer than N devices are visible (before MPI starts), else
// the opened rank (open_gpu_rank_or_exit).
inline GpuRank start_gpu_test(int argc, char** argv, const char* test) {
  const int ranks = ranks_option(argc, argv);
  if (ranks == 0) std::exit(2);
  if (skip_without_devices(ranks, test)) std::exit(kSkip);
  return open_gpu_rank_or_exit((std::string("FAIL ") + test).c_str());
}

}  // namespace gj::test
