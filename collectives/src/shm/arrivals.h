// Arrival counters of a communicator's ranks in shared memory: how many collectives each rank
// has entered. A progress thread that reaches a request before its peers (they are still
// computing) waits here, sleeping on a futex, instead of inside the request's MPI or
// shared-memory collectives, where it would spin on a CPU its own rank's compute threads
// need. Every host collective arrives, blocking or not, so the n-th arrival of every rank is
// the same collective (the host queue runs them in issue order), whichever kind each rank
// called it as.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

#include "shm/segment.h"
#include "shm/wait.h"

namespace gj::shm {

class Arrivals {
 public:
  // Collective over comm. nullptr (the reason in why_not) when its ranks are not all on one
  // node or the segment cannot be made. timeout_ms bounds each wait (0 = forever), as
  // GJ_COLL_TIMEOUT_MS bounds every other shared-memory wait for a peer.
  static std::unique_ptr<Arrivals> create(MPI_Comm comm, long timeout_ms, std::string* why_not);
  Arrivals(std::unique_ptr<Segment> segment, int rank, int size, long timeout_ms);

  // This rank enters its next collective; returns the collective's number (1, 2, ...). Wakes
  // a peer sleeping for it. A few nanoseconds when nobody sleeps.
  std::uint64_t arrive();
  // Returns once every peer has arrived at collective n: spins briefly, yields a few times,
  // then sleeps on the futex of the latest peer's counter. Throws gj::Error(gjTimeout) naming
  // the peer after the timeout (a dead or stalled peer).
  void wait_for_peers(std::uint64_t n) const;
  // From now on the waits ask peers (made for the same communicator) whether a peer is gone.
  void watch_peers(std::shared_ptr<const peer::PeerCheck> peers) {
    peers_ = std::move(peers);
    policy_.peers = peers_.get();
  }

 private:
  StageWord& word(int q) const;

  std::unique_ptr<Segment> seg_;
  int rank_;
  int size_;
  std::uint64_t arrived_ = 0;
  WaitPolicy policy_;
  std::shared_ptr<const peer::PeerCheck> peers_;
};

}  // namespace gj::shm
