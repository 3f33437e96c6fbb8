// Whether the peers of one communicator are still there: the waits of every path ask it while
// they are not satisfied. A peer is lost when the rank monitor said so (monitor.h: its wrapper
// saw it leave, exit or die, or its pod go), or, for a peer on this node, when its process no
// longer exists (the fallback without a wrapper). Then the wait throws gj::Error(gjPeerLost)
// naming the peer's world rank, its host and the reason, and tells the wrapper
// (`fail kind=peer-lost`).
#pragma once

#include <mpi.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mpi_base/peer_check.h"
#include "peer/monitor.h"

namespace gj::peer {

// How long a wait that is under way when its peer is reported lost keeps waiting: the peer's
// part may be on its way (an MPI message in flight from a rank that finished this collective
// and then left). Far below the 2 s a lost peer's collective may take to fail.
constexpr long kGraceMs = 250;
// With a rank wrapper, how long a peer whose process is gone waits for the wrapper's `lost`
// line, whose reason says more (its exit code, the signal, the OOM killer) than "its process
// is gone".
constexpr long kWrapperReasonMs = 500;
class Liveness final : public PeerCheck {
 public:
  // Collective over comm: every rank's world rank, process id and host name.
  static std::shared_ptr<const Liveness> create(MPI_Comm comm);

  // Throws gj::Error(gjPeerLost) when rank `peer` of the communicator is lost: reported at
  // least kGraceMs ago (grace) or at all (!grace), or (check_pid) its process on this node is gone.
  void check_peer(int peer, bool check_pid, bool grace = true) const override;
  // The same for every rank of the communicator (a wait that cannot tell whom it waits for;
  // no process checks).
  void check_any(bool grace = true) const override;
  // The first thing to test: false while no rank of the job is known lost (one atomic load).
  static bool anything_lost() noexcept { return lost_epoch() != 0; }

  int size() const { return static_cast<int>(members_.size()); }
  int world_rank(int peer) const { return members_[static_cast<std::size_t>(peer)].world; }

 private:
  struct Member {
    int world;
    int pid;
    std::string host;
    bool pid_visible;  // on this node, in this process's pid namespace
  };
  void check_member(const Member& m, bool check_pid, bool grace) const;

  std::vector<Member> members_;
  int me_ = 0;
  mutable std::mutex m_;
  mutable std::map<int, std::chrono::steady_clock::time_point> pid_gone_;  // by world rank
};

// "rank R (host H) left the job: REASON", the one form of a lost peer's message.
std::string lost_message(int world_rank, const Lost& lost);
// Throws the gjPeerLost error for world_rank (after telling the wrapper `fail kind=peer-lost`).
[[noreturn]] void throw_lost(int world_rank, const Lost& lost);

}  // namespace gj::peer
