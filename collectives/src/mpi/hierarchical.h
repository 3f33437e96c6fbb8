// The two-level host path for communicators whose ranks span several nodes: within a node the
// shared-memory engine reduces, one leader per node (its lowest rank) exchanges with the other
// leaders over MPI, and the node then shares the result. Allreduce (and so the grouped
// allreduce's fused groups), broadcast, allgather(v) and reduce-scatter. docs/collectives.md,
// "Hierarchical host path", says where the reduction order differs from the flat path.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "backend.h"
#include "shm/shm_allreduce.h"

namespace gj {

class Hierarchy {
 public:
  // Collective over comm (borrowed; it must outlive the hierarchy). Returns nullptr on every
  // rank, with the reason in why_not, when the path cannot pay (one node, or one rank per node)
  // or a node's shared-memory engine could not be set up; the caller then uses the flat path.
  static std::unique_ptr<Hierarchy> create(MPI_Comm comm, const shm::ShmOptions& options, std::string* why_not);
  virtual ~Hierarchy() = default;

  // gjAllReduceScaled's semantics (count > 0). Collective over comm.
  virtual void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype, gjRedOp_t op,
                         Scale scale) = 0;
  virtual void broadcast(void* buf, std::size_t bytes, int root) = 0;
  // gjAllGatherV / gjReduceScatter semantics. Return false (on every rank alike: the decision
  // depends on the counts only) when a size exceeds MPI's int counts: the caller runs the flat path.
  virtual bool allgatherv(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype) = 0;
  virtual bool reduce_scatter(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype,
                              gjRedOp_t op, Scale scale) = 0;
  // For the communicator's info line: "hierarchical (3 nodes of 1-2 ranks; ...)".
  virtual std::string describe() const = 0;
};

}  // namespace gj
