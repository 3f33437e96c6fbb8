#include "stall_abort.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "peer/monitor.h"

namespace gj {
namespace {

using Clock = std::chrono::steady_clock;

void abort_job(const std::string& report) {
  std::fprintf(stderr, "%s\n", report.c_str());
  std::fflush(stderr);
  peer::fail("stall", report);
  MPI_Abort(MPI_COMM_WORLD, kStallExitCode);
}

}  // namespace

long StallAbort::limit_ms(long timeout_ms) {
  if (timeout_ms <= 0) return 0;
  return timeout_ms + std::clamp(timeout_ms / 10, 1000L, 30000L);
}

StallAbort::StallAbort(long timeout_ms, int rank, Fire fire)
    : timeout_ms_(timeout_ms), limit_ms_(limit_ms(timeout_ms)), rank_(rank), fire_(fire ? std::move(fire) : abort_job) {
  if (limit_ms_ > 0) thread_ = std::thread([this] { watch(); });
}

StallAbort::~StallAbort() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

// A collective is taken to run since the first poll that saw it (its seq, odd), so the watch
// fires between limit and limit + one period after the call began.
void StallAbort::watch() {
  const auto period = std::chrono::milliseconds(std::clamp(limit_ms_ / 10, 10L, 1000L));
  std::uint64_t seen = 0;
  Clock::time_point since{};
  std::unique_lock<std::mutex> lock(m_);
  while (!cv_.wait_for(lock, period, [&] { return stop_; })) {
    const std::uint64_t now_seq = seq_.load(std::memory_order_acquire);
    if ((now_seq & 1) == 0) continue;  // idle
    const Clock::time_point now = Clock::now();
    if (now_seq != seen) {
      seen = now_seq;
      since = now;
      continue;
    }
    const long ran = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count());
    if (ran < limit_ms_) continue;
    fire_(report(call_.load(std::memory_order_relaxed), ran));
    seen = 0;  // a test's fire returns: watch the next collective afresh
  }
}

std::string StallAbort::report(const char* call, long ran_ms) const {
  return "gj-coll[" + std::to_string(rank_) + "] error: " + call + " has run for " + std::to_string(ran_ms) +
         " ms, past GJ_COLL_TIMEOUT_MS=" + std::to_string(timeout_ms_) +
         ": a peer has not joined it. This path (plain MPI) can neither time out the call nor tell which "
         "rank is missing: every waiting rank prints this line, the ranks that do not are the missing "
         "ones. Ending the job (MPI_Abort, exit status " +
         std::to_string(kStallExitCode) +
         "). If collectives may wait this long (a rank writing a checkpoint), raise GJ_COLL_TIMEOUT_MS "
         "(0 = wait for ever)";
}

}  // namespace gj
