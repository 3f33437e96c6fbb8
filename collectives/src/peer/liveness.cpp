#include "peer/liveness.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "error.h"
#include "mpi_base/mpi_check.h"

namespace gj::peer {
namespace {

constexpr int kHostChars = 64;

struct Card {  // what each rank tells the others at creation
  int world;
  int pid;
  char host[kHostChars];
};

std::string this_host() {
  char host[kHostChars] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown");
  return host;
}

// A process that no longer exists, or a zombie nobody reaped yet (it will never run again).
bool process_gone(int pid) {
  if (kill(pid, 0) == 0 || errno == EPERM) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    const std::size_t close = line.rfind(')');  // the command name may hold spaces and ')'
    return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
  }
  return errno == ESRCH;
}

}  // namespace

std::shared_ptr<const Liveness> Liveness::create(MPI_Comm comm) {
  auto l = std::make_shared<Liveness>();
  int size = 0;
  mpi_check(MPI_Comm_rank(comm, &l->me_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  Card mine{};
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &mine.world), "MPI_Comm_rank(MPI_COMM_WORLD)");
  mine.pid = static_cast<int>(getpid());
  const std::string host = this_host();
  std::strncpy(mine.host, host.c_str(), kHostChars - 1);
  std::vector<Card> cards(static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, cards.data(), sizeof mine, MPI_BYTE, comm),
            "MPI_Allgather(peer liveness cards)");
  for (Card& c : cards) {
    c.host[kHostChars - 1] = '\0';
    const bool same_host = host == c.host;
    // A pid is comparable only where this process sees it alive now (same pid namespace).
    const bool visible = same_host && c.pid != mine.pid && !process_gone(c.pid);
    l->members_.push_back(Member{c.world, c.pid, c.host, visible});
  }
  return l;
}

void Liveness::check_member(const Member& m, bool check_pid, bool grace) const {
  if (anything_lost()) {
    if (const auto lost = peer::lost(m.world)) {
      const auto age = std::chrono::steady_clock::now() - lost->since;
      if (!grace || age >= std::chrono::milliseconds(kGraceMs)) throw_lost(m.world, *lost);
    }
  }
  if (check_pid && m.pid_visible && process_gone(m.pid)) {
    if (attached()) {  // the wrapper's reason is coming: wait for it a little
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard<std::mutex> lock(m_);
      const auto since = pid_gone_.emplace(m.world, now).first->second;
      if (now - since < std::chrono::milliseconds(kWrapperReasonMs)) return;
    }
    mark_lost(m.world, m.host, "its process (pid " + std::to_string(m.pid) + ") is gone");
    throw_lost(m.world, *peer::lost(m.world));
  }
}

void Liveness::check_peer(int peer, bool check_pid, bool grace) const {
  if (peer < 0 || peer >= size() || peer == me_) return;
  check_member(members_[static_cast<std::size_t>(peer)], check_pid, grace);
}

void Liveness::check_any(bool grace) const {
  if (!anything_lost()) return;
  for (int q = 0; q < size(); ++q) {
    if (q != me_) check_member(members_[static_cast<std::size_t>(q)], false, grace);
  }
}

std::string lost_message(int world_rank, const Lost& lost) {
  static const std::string kLeft = "left the job: ";
  const std::string why =
      lost.reason.compare(0, kLeft.size(), kLeft) == 0 ? lost.reason.substr(kLeft.size()) : lost.reason;
  return "rank " + std::to_string(world_rank) + " (host " + lost.host + ") left the job: " + why;
}

void throw_lost(int world_rank, const Lost& lost) {
  const std::string message = lost_message(world_rank, lost);
  fail("peer-lost", message);
  throw Error(gjPeerLost, message);
}

}  // namespace gj::peer
