// The pure part of alltoall-v: where each peer's block starts in the send and receive buffers,
// and the order in which pairs exchange when MPI_Alltoallv cannot carry the sizes.
#pragma once

#include <cstddef>
#include <vector>

namespace gj::alltoall {

// Element offsets of each rank's block: offsets[q] = counts[0] + ... + counts[q-1]. Inline:
// the NCCL backend's OBJECT library uses it without the core's objects.
inline std::vector<std::size_t> offsets(const std::size_t* counts, int size) {
  std::vector<std::size_t> out(static_cast<std::size_t>(size));
  std::size_t at = 0;
  for (int q = 0; q < size; ++q) {
    out[static_cast<std::size_t>(q)] = at;
    at += counts[q];
  }
  return out;
}

// One step of the pairwise exchange: this rank sends to send_peer and receives from recv_peer.
struct Step {
  int send_peer;
  int recv_peer;
};
// size - 1 steps (step k: send to rank + k, receive from rank - k, modulo size); every pair
// meets exactly once, and at each step every rank's send_peer receives from it.
std::vector<Step> pairwise_steps(int rank, int size);

// Whether every byte count (counts[q] * elem) and every byte offset fits an MPI int, so one
// MPI_Alltoallv of MPI_BYTE can carry the exchange.
bool fits_int(const std::size_t* counts, int size, std::size_t elem);

// The first rank q whose block disagrees: rank q says it sends theirs[q] elements to this
// rank while this rank expects mine[q]; -1 when every pair agrees.
int first_mismatch(const std::size_t* mine, const std::size_t* theirs, int size);

}  // namespace gj::alltoall
