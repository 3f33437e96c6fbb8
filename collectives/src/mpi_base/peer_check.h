// What a wait that is not yet satisfied asks now and then: whether the peer it waits for is
// gone (implemented by peer/liveness.h). An interface of its own so that the shared-memory
// engine, which is also built and tested alone, needs no more than this header.
#pragma once

#include <atomic>
#include <string>

namespace gj::peer {

// 0 while no rank of the job is known lost; grows with every newly lost rank (monitor.h). Here,
// header-only, so that the parts built apart (the NCCL backend) test it with one load.
inline std::atomic<unsigned> g_lost_epoch{0};
inline unsigned lost_epoch() noexcept { return g_lost_epoch.load(std::memory_order_acquire); }

// Where `fail kind=... reason=...` goes (monitor.cpp sets it): null without the core library.
using FailSink = void (*)(const char* kind, const std::string& reason);
inline std::atomic<FailSink> g_fail_sink{nullptr};
inline void report_fail(const char* kind, const std::string& reason) {
  if (const FailSink sink = g_fail_sink.load()) sink(kind, reason);
}

// How often an unsatisfied wait looks whether a same-node peer's process still exists.
constexpr long kPidCheckMs = 50;

class PeerCheck {
 public:
  virtual ~PeerCheck() = default;
  // Throws gj::Error(gjPeerLost) naming the peer (a rank of the communicator the check was
  // made for) when it is known lost or (check_pid) its process on this node is gone.
  virtual void check_peer(int peer, bool check_pid, bool grace = true) const = 0;
  // The same for any rank of the communicator.
  virtual void check_any(bool grace = true) const = 0;
};

// The check of the communicator whose collective this thread runs now (set by the host queue
// around every collective, blocking or not): waits that do not know their communicator (MPI
// requests, the agreement check, the node's engine under the hierarchical path waiting for a
// leader that failed) ask it, so that a lost rank anywhere in the communicator fails them.
inline thread_local const PeerCheck* t_current = nullptr;

// Sets t_current for one scope.
class Watching {
 public:
  explicit Watching(const PeerCheck* check) noexcept : saved_(t_current) { t_current = check; }
  ~Watching() { t_current = saved_; }
  Watching(const Watching&) = delete;
  Watching& operator=(const Watching&) = delete;

 private:
  const PeerCheck* saved_;
};

}  // namespace gj::peer
