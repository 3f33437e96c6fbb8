// NCCL backend for device buffers. Built only when CUDA and NCCL are found (GJ_HAVE_NCCL).
#pragma once

#include <mpi.h>

#include <memory>

#include "../backend.h"
#include "../config.h"

namespace gj {

// Collective over comm: selects device local_rank % device_count, rank 0 creates the NCCL
// unique id, MPI_Bcast, ncclCommInitRank. Throws gj::Error naming the failed call.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int local_rank, const Config& config);

}  // namespace gj
