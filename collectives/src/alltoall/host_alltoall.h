// Alltoall-v of host buffers over MPI, and the pairwise count check both backends run first
// when the agreement check is on.
#pragma once

#include <mpi.h>

#include <cstddef>

#include "gj/collectives.h"

namespace gj::alltoall {

// Rank q's block of send (sendcounts[q] elements) goes to rank q; rank q's block for this rank
// lands at recv's block q (recvcounts[q] elements). send and recv do not overlap. One
// MPI_Alltoallv of bytes when the byte counts fit an int, else a pairwise MPI_Sendrecv
// exchange in pieces of at most 1 GiB. Throws gj::Error (gjMpiError) naming the call.
void host_alltoallv(MPI_Comm comm, const void* send, const std::size_t* sendcounts, void* recv,
                    const std::size_t* recvcounts, gjDataType_t dtype);

// The exchange without MPI_Alltoallv: size - 1 steps of one Isend/Irecv pair each (pairwise_steps),
// every block in pieces of at most piece_bytes, this rank's own block copied. What
// host_alltoallv runs beyond int byte counts (piece_bytes = 1 GiB); tests pass small pieces.
void pairwise_alltoallv(MPI_Comm comm, const void* send, const std::size_t* sendcounts, void* recv,
                        const std::size_t* recvcounts, gjDataType_t dtype, std::size_t piece_bytes);

// Collective over comm: every rank's recvcounts[q] equals what rank q passed as sendcounts
// for it (one MPI_Alltoall of the counts, one MPI_Allreduce of the verdict). Throws
// gj::Error(gjInvalidUsage) on every rank when any pair disagrees, naming the first pair.
void require_matching_counts(MPI_Comm comm, const char* call, const std::size_t* sendcounts,
                             const std::size_t* recvcounts);

}  // namespace gj::alltoall
