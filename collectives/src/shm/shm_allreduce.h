// Intra-node allreduce over POSIX shared memory for host buffers: when every rank of a
// communicator is on one node, ranks reduce directly in a shared segment instead of going
// through MPI's point-to-point path. Owned by the performance work (see docs/benchmarks.md).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "gj/collectives.h"

namespace gj::shm {

class ShmAllreduce {
 public:
  // Collective over comm. Returns nullptr (and says why through `why_not`, if given) when the
  // ranks of comm are not all on one node or shared memory cannot be set up; the caller then
  // uses plain MPI. Throws gj::Error only for bugs / MPI failures.
  static std::unique_ptr<ShmAllreduce> create(MPI_Comm comm, std::string* why_not = nullptr);
  virtual ~ShmAllreduce() = default;

  // Same semantics as gjAllReduce on host buffers (in place when send == recv; gjAvg as the
  // public header says). Collective over the comm given to create(). Throws gj::Error.
  virtual void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype,
                         gjRedOp_t op) = 0;
};

}  // namespace gj::shm
