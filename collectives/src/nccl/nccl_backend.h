// NCCL backend for device buffers. Built only when CUDA and NCCL are found (GJ_HAVE_NCCL).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "../backend.h"
#include "../config.h"

namespace gj {

// Collective over comm: finds NCCL (nccl_search.h; the first call searches), checks that every
// rank has a device and that no two ranks share one (host + PCI bus id; allowed with NCCL >= 2.30
// and NCCL_MULTI_RANK_GPU_ENABLE=1), then rank 0 creates the NCCL unique id, MPI_Bcast,
// ncclCommInitRankConfig on `device` (made current for the call; the caller's current device is
// restored). Throws gj::Error naming the failed call; gjUnsupported (on every rank alike, before
// any NCCL init) when some rank has no NCCL library or no device, or two ranks share a device.
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, int device, const Config& config);

// For the communicator's info line: "NCCL 2.28.9 from /path/libnccl.so.2 (...)".
std::string nccl_backend_description(const Config& config);

// Collective, at communicator creation when device buffers may use NCCL: throws
// gj::Error(gjUnsupported) on every rank when some host has more ranks than visible CUDA devices
// and the NCCL found refuses shared devices (nccl_plan.h, too_many_ranks: the message says what
// to change), instead of failing at the first device collective.
void check_devices_per_host(MPI_Comm comm, const Config& config);

// gjNcclVersion: the version of the NCCL library the backend loads (searched on the first call,
// as for a communicator), or 0 with *why saying why none loads.
int nccl_library_version(const Config& config, std::string* why);

}  // namespace gj
