// Allreduce in place among the ranks of a communicator as a pipelined ring of MPI
// point-to-point messages, for the node leaders' exchange of large messages (the hierarchical
// path, docs/collectives.md). A ring reduce-scatter (p - 1 steps) followed by a ring allgather
// (p - 1 steps) moves 2 (p - 1) / p of the buffer through every link, the least an allreduce
// can; chunks travel on as soon as they are reduced or received, so the reduction of one chunk
// overlaps the transfer of the next and no step waits for a whole segment.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "gj/collectives.h"

namespace gj {

// From this many bytes up the hierarchical path's leaders use the ring; below it the latency
// of 2 (p - 1) steps costs more than MPI_Allreduce's own algorithms (docs/benchmarks.md).
constexpr std::size_t kLeaderRingMinBytes = std::size_t{1} << 20;

// buf (count elements of dtype) becomes the reduction over comm's ranks with op (gjAvg is the
// sum: callers scale). Segment k (shm::slice_of's cut) is reduced along the ring from rank k
// on, each step `local op received`, complete at rank k - 1, whose bits every rank gets.
// scratch is reused between calls (grown to one segment). Collective; throws gj::Error on MPI
// failures, naming the call.
void ring_allreduce(void* buf, std::size_t count, gjDataType_t dtype, gjRedOp_t op, MPI_Comm comm,
                    std::vector<unsigned char>& scratch);

}  // namespace gj
