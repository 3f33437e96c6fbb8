// Collective progress, per communicator, as this rank sees it: the sequence number and kind of
// the last collective it entered and completed, how long it has been in the current one, and
// running totals (collectives, bytes, time in collectives). A reporter thread sends one `prog`
// line per communicator every second up the rank socket (peer/monitor.h); the master's job
// monitor names the ranks that hold up a collective from them, and prints status lines and the
// end-of-job per-rank lines (docs/agent.md "Hangs", "Status lines").
//
// enter()/complete() bracket every collective (api/enqueue.cpp, the host queue); each is a few
// relaxed atomic operations and one clock read: no lock, no system call on the collective's path.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gj::peer {

// "0-3,5,7-8" for sorted world ranks; pure.
std::string rank_ranges(const std::vector<int>& sorted_ranks);
// A set's id: the same on every member for the n-th communicator over the same members; pure.
std::string set_id(const std::vector<int>& sorted_world_ranks, int nth);

class Progress {
 public:
  // members: the world ranks of the communicator, sorted. Registers with the reporter (which
  // starts with the first one, when a rank wrapper is attached).
  Progress(std::vector<int> members, int nth);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // This rank calls a collective (`call` is a static string: the C entry point's name).
  void enter(const char* call, std::uint64_t bytes) noexcept;
  // n collectives (the oldest entered, in order) have their results.
  void complete(std::uint64_t n = 1) noexcept;

  // The `set` line (once) and the `prog` line (now_ns: steady clock); pure reads.
  std::string set_line() const;
  std::string prog_line(std::int64_t now_ns) const;

 private:
  static constexpr std::size_t kRing = 64;  // calls of the last entered collectives, by sequence
  const std::vector<int> members_;
  const std::string id_;
  std::atomic<std::uint64_t> entered_{0};
  std::atomic<std::uint64_t> completed_{0};
  std::atomic<std::int64_t> changed_ns_{0};  // steady clock of the last enter or complete
  std::atomic<std::int64_t> in_ns_{0};       // total time between enter and complete
  std::atomic<std::int64_t> entered_at_[kRing] = {};  // enter time by sequence % kRing
  std::atomic<const char*> calls_[kRing] = {};
  std::atomic<std::uint64_t> bytes_{0};
};

}  // namespace gj::peer
