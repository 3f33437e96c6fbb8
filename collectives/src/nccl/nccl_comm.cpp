#include "nccl_comm.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "../cuda/check.h"
#include "../error.h"
#include "../mpi_base/mpi_check.h"
#include "nccl_plan.h"
#include "nccl_watchdog.h"

namespace gj::nccl {
namespace {

using Clock = std::chrono::steady_clock;

// Polls until done() with a deadline; yields first (collectives usually finish within
// microseconds), then sleeps in proportion to the time waited (poll_pause_us), so that a long
// wait does not burn a core and a short one gets no fixed sleep added.
class Poller {
 public:
  explicit Poller(long timeout_ms)
      : start_(Clock::now()), timeout_(std::chrono::milliseconds(timeout_ms)), forever_(timeout_ms <= 0) {}
  bool expired() const { return !forever_ && Clock::now() - start_ > timeout_; }
  void pause() const {
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
    const long us = poll_pause_us(static_cast<long>(waited));
    if (us == 0) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(us));
  }

 private:
  Clock::time_point start_;
  Clock::duration timeout_;
  bool forever_;
};

}  // namespace

static cudaError_t query(cudaEvent_t event) {
  const cudaError_t e = cudaEventQuery(event);
  // The runtime records "not ready" as the thread's last error: left there, the next kernel
  // launch check (cudaGetLastError after a launch) would report it as that launch's failure.
  if (e == cudaErrorNotReady) (void)cudaGetLastError();
  return e;
}

std::string nccl_error_text(const std::string& what, ncclResult_t result, const char* last_error) {
  return what + ": " + ncclGetErrorString(result) + " (" + (last_error != nullptr ? last_error : "") +
         "; run with NCCL_DEBUG=WARN for details)";
}

Comm::Comm(MPI_Comm mpi_comm, long timeout_ms) : timeout_ms_(timeout_ms) {
  mpi_check(MPI_Comm_rank(mpi_comm, &rank_), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(mpi_comm, &size_), "MPI_Comm_size");

  // Rank 0's result travels with the id, so a failure there cannot leave the others waiting.
  struct {
    int result;
    ncclUniqueId id;
  } msg{};
  if (rank_ == 0) msg.result = ncclGetUniqueId(&msg.id);
  mpi_check(MPI_Bcast(&msg, sizeof msg, MPI_BYTE, 0, mpi_comm), "MPI_Bcast(ncclUniqueId)");
  if (msg.result != ncclSuccess) {
    const auto r = static_cast<ncclResult_t>(msg.result);
    throw Error(gjNcclError, nccl_error_text(std::string(rank_ == 0 ? "" : "on rank 0: ") + "ncclGetUniqueId", r,
                                             ncclGetLastError(nullptr)));
  }

  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const std::string what = "ncclCommInitRankConfig(nranks=" + std::to_string(size_) +
                           ", rank=" + std::to_string(rank_) + ")";
  const ncclResult_t r = ncclCommInitRankConfig(&comm_, size_, msg.id, rank_, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    // comm_ may be set even on failure; abort releases what was allocated.
    abort();
    throw Error(gjNcclError, nccl_error_text(what, r, ncclGetLastError(nullptr)));
  }
  complete(r, what);
}

Comm::~Comm() {
  stop_watchdog();
  for (const Pending& p : pending_) (void)cudaEventDestroy(p.event);
  for (cudaEvent_t e : spare_events_) (void)cudaEventDestroy(e);
  if (comm_ == nullptr) return;
  try {
    finalize();
  } catch (const std::exception& e) {
    // finalize() has aborted the communicator already; a destructor can only report.
    std::fprintf(stderr, "gj collectives: NCCL communicator teardown: %s\n", e.what());
  }
  if (comm_ != nullptr) ncclCommDestroy(comm_);
}

void Comm::finalize() {
  if (comm_ == nullptr || finalized_) return;
  complete(ncclCommFinalize(comm_), "ncclCommFinalize (waiting for the enqueued NCCL operations)");
  finalized_ = true;
}

void Comm::ensure_usable(const std::string& what) const {
  if (comm_ == nullptr && watchdog_code_ != gjSuccess && !watchdog_reported_) {
    watchdog_reported_ = true;
    throw Error(watchdog_code_, abort_reason_);
  }
  if (comm_ == nullptr) {
    throw Error(gjInvalidUsage, what + ": the NCCL communicator was aborted" +
                                    (abort_reason_.empty() ? std::string() : " after: " + abort_reason_));
  }
}

ncclResult_t Comm::async_state() {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
  return r != ncclSuccess ? r : state;
}

// Every NCCL error is fatal for the communicator: a nonblocking communicator records even an
// argument error of one call as its asynchronous error (the backend validates arguments before
// calling NCCL, so such an error is a bug or a broken peer, never the caller's input).
void Comm::complete(ncclResult_t result, const std::string& what) {
  ensure_usable(what);
  Poller poll(timeout_ms_);
  if (result == ncclSuccess) result = async_state();
  while (result == ncclInProgress) {
    if (poll.expired()) time_out(what);
    check_peers();  // setup or finalize waiting for a rank that left
    poll.pause();
    result = async_state();
  }
  if (result != ncclSuccess) fail(result, what);
}

bool Comm::done(cudaEvent_t event, const std::string& what) {
  ensure_usable(what);
  const cudaError_t e = query(event);
  if (e == cudaSuccess) return true;
  if (e != cudaErrorNotReady) cuda::throw_cuda_error(e, "cudaEventQuery(waiting for " + what + ")");
  const ncclResult_t state = async_state();
  if (state != ncclSuccess && state != ncclInProgress) fail(state, what);
  check_peers();
  return false;
}

void Comm::check_peers() {
  if (peers_ == nullptr || peer::lost_epoch() == 0) return;
  try {
    peers_->check_any();
  } catch (const Error& e) {
    if (e.code() != gjPeerLost) throw;
    abort_reason_ = std::string(e.what()) + "; NCCL communicator aborted";
    abort();
    throw Error(gjPeerLost, abort_reason_);
  }
}

void Comm::wait(cudaEvent_t event, const std::string& what) {
  Poller poll(timeout_ms_);
  while (!done(event, what)) {
    if (poll.expired()) time_out(what);
    poll.pause();
  }
}

void Comm::fail(ncclResult_t result, const std::string& what) {
  const std::string msg = nccl_error_text(what, result, ncclGetLastError(comm_)) + "; NCCL communicator aborted";
  abort_reason_ = msg;
  abort();
  throw Error(gjNcclError, msg);
}

void Comm::time_out(const std::string& what) {
  const std::string msg = what + " did not complete within GJ_COLL_TIMEOUT_MS=" + std::to_string(timeout_ms_) +
                          " ms (a peer rank may have failed or stopped calling collectives); "
                          "NCCL communicator aborted";
  abort_reason_ = msg;
  abort();
  throw Error(gjTimeout, msg);
}

void Comm::track(cudaStream_t stream, const Operation& op) {
  // Only timeouts and the peer check need the events.
  if (comm_ == nullptr || (timeout_ms_ <= 0 && peers_ == nullptr)) return;
  cudaEvent_t e = nullptr;
  if (!spare_events_.empty()) {
    e = spare_events_.back();
    spare_events_.pop_back();
  } else if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    (void)cudaGetLastError();
    return;  // untracked: the synchronous waits still bound it
  }
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    spare_events_.push_back(e);
    return;
  }
  pending_.push_back(Pending{e, Clock::now(), op});
}

void Comm::start_watchdog(int device) {
  if (watchdog_.joinable()) return;
  // Started inside the gj communicator's first device collective, whose peer check the host
  // queue has made current (peer::Watching); gjComm declares it before its backends.
  peers_ = peer::t_current;
  watchdog_ = std::thread([this, device] { watch(device); });
}

void Comm::stop_watchdog() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void Comm::watch(int device) {
  // Events and the communicator belong to this device; the thread's default would be device 0.
  if (cudaSetDevice(device) != cudaSuccess) (void)cudaGetLastError();
  // Relaxed: this thread's cudaEventQuery is a potentially unsafe call, which in the default
  // (global) mode would invalidate a global-mode graph capture running on another thread.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) (void)cudaGetLastError();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, watch_period(timeout_ms_));
    if (stop_) break;
    if (comm_ == nullptr) continue;
    if (const ncclComm_t doomed = watch_once(); doomed != nullptr) {
      // Marked aborted under the lock (every call now fails at once with the cause); the abort
      // itself waits for the communicator's work to leave the streams (a user's kernel stalled
      // before it keeps it waiting), so it runs without the lock.
      lock.unlock();
      ncclCommAbort(doomed);
      lock.lock();
    }
  }
}

ncclComm_t Comm::watch_once() {
  // Completed operations leave the front; the oldest pending one decides the timeout.
  while (!pending_.empty()) {
    const cudaError_t e = query(pending_.front().event);
    if (e == cudaErrorNotReady) break;
    if (e != cudaSuccess) (void)cudaGetLastError();  // a sticky CUDA error: the next call reports it
    spare_events_.push_back(pending_.front().event);
    pending_.pop_front();
  }
  const long oldest = pending_.empty() ? -1
                                       : static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                               Clock::now() - pending_.front().enqueued)
                                                               .count());
  if (!pending_.empty() && peers_ != nullptr && peer::lost_epoch() != 0) {
    try {
      peers_->check_any();
    } catch (const Error& e) {
      // A rank that left will never join the pending operation: abort instead of waiting for
      // the timeout (which may be never).
      watchdog_code_ = e.code();
      abort_reason_ = std::string(e.what()) + "; NCCL communicator aborted";
      return mark_aborted();
    }
  }
  const ncclResult_t state = async_state();
  switch (judge(state, oldest, timeout_ms_)) {
    case Verdict::Healthy:
      return nullptr;
    case Verdict::AsyncError:
      watchdog_code_ = gjNcclError;
      abort_reason_ = nccl_error_text("NCCL reported an asynchronous error", state, ncclGetLastError(comm_)) +
                      "; NCCL communicator aborted";
      break;
    case Verdict::TimedOut:
      watchdog_code_ = gjTimeout;
      abort_reason_ = describe(pending_.front().op) + " did not complete within GJ_COLL_TIMEOUT_MS=" +
                      std::to_string(timeout_ms_) +
                      " ms (a peer rank may have failed or stopped calling collectives); NCCL communicator aborted";
      break;
  }
  peer::report_fail("nccl-watchdog", abort_reason_);
  return mark_aborted();
}

ncclComm_t Comm::mark_aborted() {
  const ncclComm_t doomed = comm_;
  comm_ = nullptr;  // aborted from here on; watch() calls ncclCommAbort after releasing the lock
  return doomed;
}

void Comm::abort() noexcept {
  if (comm_ == nullptr) return;
  if (abort_reason_.empty()) abort_reason_ = "an explicit abort";
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

}  // namespace gj::nccl
