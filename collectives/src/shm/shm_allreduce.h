// Intra-node collectives over POSIX shared memory for host buffers (allreduce, reduce-scatter,
// broadcast, allgather): when every rank of a communicator is on one node, ranks exchange
// directly in a shared segment instead of going through MPI's point-to-point path (measured
// in docs/benchmarks.md).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "mpi_base/peer_check.h"

#include "config.h"
#include "gj/collectives.h"

namespace gj::shm {

// Tuning knobs; the defaults are what docs/benchmarks.md
// measured best on a 2-core node. Callers normally pass only timeout_ms (GJ_COLL_TIMEOUT_MS).
struct ShmOptions {
  // A wait for a peer longer than this throws gj::Error(gjTimeout) naming the peer, instead of
  // hanging when a peer stalled. 0 = wait forever (the library passes GJ_COLL_TIMEOUT_MS).
  long timeout_ms = 0;
  // Bytes of one pipeline chunk per rank; the shared segment holds 2 chunks per rank. Counts
  // larger than a chunk are processed chunk by chunk.
  std::size_t chunk_bytes = std::size_t{1} << 20;
  // preferred(bytes) is true from this many bytes up: below it the caller's MPI_Allreduce
  // measured faster (see docs/benchmarks.md). 0 = always preferred.
  std::size_t min_bytes = 0;
  // How a rank waits for its peers: Auto sleeps (futex) when the ranks outnumber the CPUs
  // they may run on (affinity, or a smaller cgroup CPU quota), else spins; Spin and Sleep force one (GJ_COLL_SHM_WAIT, tests,
  // benchmarks). All ranks must wait alike, so create() agrees on the largest value any
  // rank passed (Sleep over Spin over Auto).
  using Wait = gj::ShmWait;  // the library's setting itself (config.h)
  Wait wait = Wait::Auto;
};

class ShmAllreduce {
 public:
  // As create(comm, why_not) with the given options.
  static std::unique_ptr<ShmAllreduce> create(MPI_Comm comm, const ShmOptions& options,
                                              std::string* why_not = nullptr);
  // Collective over comm. Returns nullptr (and says why through `why_not`, if given) when the
  // ranks of comm are not all on one node or shared memory cannot be set up; the caller then
  // uses plain MPI. Throws gj::Error only for bugs / MPI failures.
  static std::unique_ptr<ShmAllreduce> create(MPI_Comm comm, std::string* why_not = nullptr);
  virtual ~ShmAllreduce() = default;

  // From now on the waits ask peers (made for the comm given to create()) whether the peer
  // they wait for is gone, and fail with its gjPeerLost.
  virtual void watch_peers(std::shared_ptr<const peer::PeerCheck> peers) = 0;

  // Same semantics as gjAllReduce on host buffers (in place when send == recv; gjAvg as the
  // public header says). Collective over the comm given to create(). Throws gj::Error.
  // pre/post: Horovod's scaling factors with gjAllReduceScaled's rules (contributions times
  // pre, float avg's 1/size folded into that one multiply; result times post). 1/1 = none.
  virtual void allreduce(const void* send, void* recv, std::size_t count, gjDataType_t dtype,
                         gjRedOp_t op, double pre = 1.0, double post = 1.0) = 0;

  // n tensors of one dtype, each reduced exactly as
  // allreduce() would (same bits), without packing them into a fusion buffer first (the two
  // copies of pack + unpack cost more than fusion saves, docs/benchmarks.md). The engine
  // reduces the tensors in one synchronized pass over their virtual concatenation (chunks
  // span tensor boundaries); counts[i] == 0 is allowed. sends[i] == recvs[i] is in place;
  // distinct tensors must not overlap. Collective.
  virtual void allreduce_group(const void* const* sends, void* const* recvs, const std::size_t* counts, int n,
                               gjDataType_t dtype, gjRedOp_t op, double pre = 1.0, double post = 1.0) {
    for (int i = 0; i < n; ++i) allreduce(sends[i], recvs[i], counts[i], dtype, op, pre, post);
  }

  // Reduce-scatter with per-rank counts (gjReduceScatter's semantics, pre/post as above):
  // send holds sum(counts) elements, this rank gets the reduction of its slice in recv (which
  // may be that slice of send: in place). Every element is reduced in rank order by its
  // owner, with the bits allreduce() gives it. Collective.
  virtual void reduce_scatter(const void* send, void* recv, const std::size_t* counts, gjDataType_t dtype,
                              gjRedOp_t op, double pre = 1.0, double post = 1.0) = 0;

  // gjBroadcast's semantics for bytes (root's buf to every rank's buf), chunk by chunk through
  // root's slots: root copies in, the others copy out, one synchronization per chunk. bytes ==
  // 0 is a signal: every rank returns once root has arrived. The waits are the engine's (spin,
  // then yield, then nap or sleep), so ranks that wait long for a root busy elsewhere (a node
  // leader exchanging with the other nodes) leave the CPUs to it. Collective.
  virtual void broadcast(void* buf, std::size_t bytes, int root) = 0;

  // gjAllGather's semantics for bytes: rank q's block (bytes[q] bytes, from its send) lands at
  // offset bytes[0] + ... + bytes[q-1] of every rank's recv; send may be this rank's block of
  // recv (in place), else it must not overlap recv. Every rank's own slots at once, chunk by
  // chunk of the largest block: each rank copies its chunk in and publishes, then copies every
  // peer's chunk out; its own block goes straight from send to recv. bytes[] must be the same
  // on every rank. Collective.
  virtual void allgatherv(const void* send, void* recv, const std::size_t* bytes) = 0;
  // Whether this path is faster than MPI_Allreduce for a
  // message of `bytes` (count * element size). Pure; the same answer on every rank, so a
  // backend that consults it per call stays collective-consistent.
  virtual bool preferred(std::size_t bytes) const { return bytes > 0; }

  // "spinning" or "sleeping": how this engine's ranks wait for each other (for logs).
  virtual const char* wait_name() const { return "spinning"; }
};

}  // namespace gj::shm
