// The host backend (gjBackendMpi): host buffers, every dtype and op, over MPI and, when one
// was set up for the communicator (all ranks on one node), the shared-memory engine, which
// then runs allreduce, grouped allreduce and reduce-scatter; or, when the ranks span nodes,
// the two-level path (mpi/hierarchical.h) for allreduce, broadcast, allgather and reduce-scatter.
#pragma once

#include <mpi.h>

#include <memory>

#include "backend.h"
#include "mpi/hierarchical.h"
#include "shm/shm_allreduce.h"

namespace gj {

// comm is borrowed (the communicator owns and frees it); shm and hierarchy may be null (at
// most one is set: shm for one node, hierarchy for several).
std::unique_ptr<Backend> make_host_backend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm,
                                           std::unique_ptr<Hierarchy> hierarchy = nullptr);

}  // namespace gj
