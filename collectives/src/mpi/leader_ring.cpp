// The ring of leader_ring.h. Step t (0 <= t < 2 (p - 1)) of rank r receives segment r - t - 1
// from the left neighbour and sends segment r - t to the right one: in the reduce-scatter
// steps (t < p - 1) a received chunk is reduced into the local one, in the allgather steps it
// is the final value. A chunk that step t made final is sent at once as step t + 1's, so chunks
// flow through the ring independently. Messages carry their chunk's index as tag: every rank
// sends the chunks of one index in step order (it forwards chunk j of step t only after
// receiving chunk j of step t - 1) and posts a step's receives after the previous step's
// completed, so MPI's in-order matching per sender and tag pairs them correctly.
#include "mpi/leader_ring.h"

#include <algorithm>
#include <string>

#include "dtype.h"
#include "host/reduce.h"
#include "mpi_base/mpi_check.h"
#include "mpi_base/mpi_wait.h"
#include "shm/plan.h"

namespace gj {
namespace {

constexpr std::size_t kChunkBytes = std::size_t{512} << 10;  // per message: pipelines, and MPI counts stay ints
constexpr int kMaxTag = 32767;                               // the tag bound MPI guarantees

struct Ring {
  unsigned char* data;
  std::size_t count;
  std::size_t es;
  gjDataType_t dtype;
  gjRedOp_t op;
  MPI_Comm comm;
  int rank;
  int size;
  std::size_t chunk;  // elements per message

  shm::Range segment(int k) const { return shm::slice_of(count, size, ((k % size) + size) % size, es); }
  std::size_t chunks(shm::Range s) const { return (s.size() + chunk - 1) / chunk; }
  shm::Range chunk_of(shm::Range s, std::size_t j) const {
    const std::size_t b = s.begin + j * chunk;
    return shm::Range{b, std::min(s.end, b + chunk)};
  }
  void check(int rc, const char* call, std::size_t n) const {
    if (rc != MPI_SUCCESS) {
      mpi_check(rc, std::string("ring allreduce among node leaders: ") + call + "(count=" + std::to_string(n) +
                        ", dtype=" + dtype_name(dtype) + ")");
    }
  }
  void send(shm::Range c, std::size_t j, std::vector<MPI_Request>& reqs) const {
    reqs.emplace_back();
    check(MPI_Isend(data + c.begin * es, static_cast<int>(c.size() * es), MPI_BYTE, (rank + 1) % size,
                    static_cast<int>(j), comm, &reqs.back()),
          "MPI_Isend", c.size());
  }
};

}  // namespace

void ring_allreduce(void* buf, std::size_t count, gjDataType_t dtype, gjRedOp_t op, MPI_Comm comm,
                    std::vector<unsigned char>& scratch) {
  int rank = 0, size = 1;
  mpi_check(MPI_Comm_rank(comm, &rank), "ring allreduce: MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "ring allreduce: MPI_Comm_size");
  if (size == 1 || count == 0) return;
  const std::size_t es = dtype_size(dtype);
  const std::size_t largest = shm::slice_of(count, size, 0, es).size();  // segment 0 is never shorter
  const std::size_t min_chunk = shm::chunk_elems(kChunkBytes, es);
  const std::size_t line = shm::kSliceAlignBytes / es;
  const std::size_t for_tags = (largest / kMaxTag + line) / line * line;  // chunk indexes fit the tags
  Ring ring{static_cast<unsigned char*>(buf), count, es, dtype, op, comm, rank, size, std::max(min_chunk, for_tags)};
  if (scratch.size() < largest * es) scratch.resize(largest * es);

  const int steps = 2 * (size - 1);
  const int left = (rank + size - 1) % size;
  std::vector<MPI_Request> sending, receiving, next_sending;
  const shm::Range first = ring.segment(rank);
  for (std::size_t j = 0; j < ring.chunks(first); ++j) ring.send(ring.chunk_of(first, j), j, sending);
  for (int t = 0; t < steps; ++t) {
    const bool reducing = t < size - 1;
    const shm::Range in = ring.segment(rank - t - 1);
    receiving.assign(ring.chunks(in), MPI_REQUEST_NULL);
    for (std::size_t j = 0; j < receiving.size(); ++j) {
      const shm::Range c = ring.chunk_of(in, j);
      unsigned char* to = reducing ? scratch.data() + (c.begin - in.begin) * es : ring.data + c.begin * es;
      ring.check(MPI_Irecv(to, static_cast<int>(c.size() * es), MPI_BYTE, left, static_cast<int>(j), comm,
                           &receiving[j]),
                 "MPI_Irecv", c.size());
    }
    next_sending.clear();
    for (std::size_t left_to_come = receiving.size(); left_to_come > 0; --left_to_come) {
      int j = MPI_UNDEFINED;
      ring.check(wait_any_polled(static_cast<int>(receiving.size()), receiving.data(), &j), "MPI_Testany",
                 in.size());
      const shm::Range c = ring.chunk_of(in, static_cast<std::size_t>(j));
      if (reducing) {
        host::reduce_into(ring.data + c.begin * es, scratch.data() + (c.begin - in.begin) * es, c.size(), dtype, op);
      }
      if (t + 1 < steps) ring.send(c, static_cast<std::size_t>(j), next_sending);
    }
    // This step's sends are done before a later step receives into what they read.
    ring.check(wait_all_polled(static_cast<int>(sending.size()), sending.data()), "MPI_Testall", in.size());
    sending.swap(next_sending);
  }
}

}  // namespace gj
