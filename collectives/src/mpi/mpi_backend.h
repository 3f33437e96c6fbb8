// The MPI backend: host buffers, every dtype and op. Uses the intra-node shared-memory
// allreduce when one was set up for the communicator.
#pragma once

#include <mpi.h>

#include <memory>

#include "backend.h"
#include "shm/shm_allreduce.h"

namespace gj {

// comm is borrowed (the communicator owns and frees it); shm may be null.
std::unique_ptr<Backend> make_mpi_backend(MPI_Comm comm, std::unique_ptr<shm::ShmAllreduce> shm);

}  // namespace gj
