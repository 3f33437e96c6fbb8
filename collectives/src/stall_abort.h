// The bound on a host collective that cannot time out by itself. A blocking MPI collective
// (MPI_Allreduce, MPI_Bcast, ...) can neither time out nor be cancelled, so on the plain MPI
// path (across nodes, or GJ_COLL_SHM=0) a peer that never joins would keep every other rank
// waiting for ever. The shared-memory and NCCL paths bound their own waits by
// GJ_COLL_TIMEOUT_MS and return gjTimeout; this watch fires only later (limit_ms), when a
// collective is still running: it reports the call and ends the job, as Horovod's
// HOROVOD_STALL_SHUTDOWN_TIME_SECONDS does (docs/collectives.md, "Failure").
//
// arm()/disarm() are two relaxed atomic increments (they bracket every host collective);
// a thread that sleeps between polls decides.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace gj {

// The exit status of a job ended by the watch (that of coreutils' timeout).
constexpr int kStallExitCode = 124;

class StallAbort {
 public:
  // Receives the one-line report; the default logs it and calls
  // MPI_Abort(MPI_COMM_WORLD, kStallExitCode). Tests pass their own.
  using Fire = std::function<void(const std::string& report)>;

  // Pure: how long a collective may run before the watch fires: GJ_COLL_TIMEOUT_MS plus a
  // grace (a tenth of it, 1 to 30 s) that lets the bounded paths return gjTimeout first.
  // timeout_ms <= 0: never (0 = wait for ever, as everywhere).
  static long limit_ms(long timeout_ms);

  // rank: this rank in the communicator, for the report. No thread when limit_ms is 0.
  StallAbort(long timeout_ms, int rank, Fire fire = {});
  ~StallAbort();
  StallAbort(const StallAbort&) = delete;
  StallAbort& operator=(const StallAbort&) = delete;

  void arm(const char* call) noexcept {
    call_.store(call, std::memory_order_relaxed);
    seq_.fetch_add(1, std::memory_order_release);  // odd: a collective runs
  }
  void disarm() noexcept { seq_.fetch_add(1, std::memory_order_release); }

 private:
  void watch();
  std::string report(const char* call, long ran_ms) const;

  const long timeout_ms_;
  const long limit_ms_;
  const int rank_;
  const Fire fire_;
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<const char*> call_{""};
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Brackets one collective: arm on construction, disarm on exit (also by exception).
class Armed {
 public:
  Armed(StallAbort& watch, const char* call) noexcept : watch_(watch) { watch_.arm(call); }
  ~Armed() { watch_.disarm(); }
  Armed(const Armed&) = delete;
  Armed& operator=(const Armed&) = delete;

 private:
  StallAbort& watch_;
};

}  // namespace gj
