// NCCL backend for device buffers. Built only when CUDA and NCCL are found (GJ_HAVE_NCCL).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "../backend.h"
#include "../config.h"

namespace gj {

// Collective over comm: finds NCCL (nccl_search.h; the first call searches), uses the caller's
// current CUDA device, rank 0 creates the NCCL unique id, MPI_Bcast, ncclCommInitRank. Throws
// gj::Error naming the failed call; gjUnsupported (on every rank alike, before any NCCL init)
// when some rank has no NCCL library or no device. local_rank is not used.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int local_rank, const Config& config);

// For the communicator's info line: "NCCL 2.28.9 from /path/libnccl.so.2, device 0".
std::string nccl_backend_description();

}  // namespace gj
