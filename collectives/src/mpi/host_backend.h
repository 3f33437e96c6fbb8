// The host backend (gjBackendMpi): host buffers, every dtype and op, over MPI and, when one
// was set up for the communicator (all ranks on one node), the shared-memory engine, which
// then runs allreduce, grouped allreduce and reduce-scatter.
#pragma once

#include <mpi.h>

#include <memory>

#include "backend.h"
#include "shm/shm_allreduce.h"

namespace gj {

// comm is borrowed (the communicator owns and frees it); shm may be null.
std::unique_ptr<Backend> make_host_backend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm);

}  // namespace gj
