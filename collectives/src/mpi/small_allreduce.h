// Small allreduces on the plain MPI path as recursive doubling over point-to-point messages,
// completed by polling (mpi_wait.h) so that a lost peer fails them. MPI_Iallreduce would do
// as well but costs about 1 us more per call than the blocking MPI_Allreduce at 2 ranks (its
// nonblocking schedule), while this exchange is what the blocking call does for small
// messages: log2(p) send/receive pairs, each followed by the local reduction.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

#include "gj/collectives.h"

namespace gj {

// Up to this many bytes, on a power-of-two number of ranks, the exchange below is used.
constexpr std::size_t kSmallAllreduceMaxBytes = 4096;

// Whether small_allreduce takes a call of `bytes` on `size` ranks.
inline bool small_allreduce_fits(std::size_t bytes, int size) {
  return bytes <= kSmallAllreduceMaxBytes && size > 1 && (size & (size - 1)) == 0;
}

// buf (count elements) becomes the reduction over comm with op (gjAvg is the sum: callers
// scale). Every rank reduces the same operands in the same pairing (a op b and b op a are equal
// for every op), so every rank gets the same bits. scratch: reused, grown to the message.
// Throws gj::Error on MPI failures and gjPeerLost.
void small_allreduce(void* buf, std::size_t count, gjDataType_t dtype, gjRedOp_t op, MPI_Comm comm, int rank,
                     int size, std::vector<unsigned char>& scratch);

}  // namespace gj
