// One NCCL communicator in non-blocking mode, so that no NCCL call can block this thread longer
// than the configured timeout: initialization, connection setup on the first collectives and
// finalization all return ncclInProgress and are polled here. Every failure becomes a gj::Error
// naming the operation; every NCCL error, asynchronous errors and timeouts abort the
// communicator (ncclCommAbort),
// after which the next call throws that failure (gjTimeout / gjNcclError) and every later one
// gjInvalidUsage naming it. A watchdog thread (nccl_watchdog.h) does the same between calls.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../mpi_base/peer_check.h"
#include "nccl_plan.h"

namespace gj::nccl {

// "<what>: <ncclGetErrorString> (<last error>; run with NCCL_DEBUG=WARN for details)": the one
// form of every NCCL failure message.
std::string nccl_error_text(const std::string& what, ncclResult_t result, const char* last_error);

class Comm {
 public:
  // Collective over mpi_comm: rank 0 creates the unique id, MPI_Bcast, ncclCommInitRankConfig.
  // The caller has made the right CUDA device current. timeout_ms == 0: wait forever.
  Comm(MPI_Comm mpi_comm, long timeout_ms);
  ~Comm();  // finalize() unless done, then ncclCommDestroy; nothing when aborted
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Throws once the communicator was aborted: the failure itself the first time after the
  // watchdog aborted it (gjTimeout / gjNcclError), gjInvalidUsage naming it afterwards.
  void ensure_usable(const std::string& what) const;

  // Every use of the communicator from the caller's thread holds this, so the watchdog never
  // aborts under a call in progress.
  std::unique_lock<std::mutex> guard() { return std::unique_lock<std::mutex>(mutex_); }
  // After an operation was enqueued on stream (not during graph capture): the watchdog waits
  // for it, bounded by the timeout. Caller holds guard().
  void track(cudaStream_t stream, const Operation& op);
  // The watchdog thread, on `device`; stop_watchdog() joins it (before teardown).
  void start_watchdog(int device);
  void stop_watchdog() noexcept;
  // Completes an NCCL call: polls while ncclInProgress, then checks the result and the
  // communicator's asynchronous error state. Any NCCL error aborts the communicator.
  void complete(ncclResult_t result, const std::string& what);
  // The same for the hot path: describe() (returning the operation's name) runs only on failure.
  template <typename Describe>
  void complete_lazy(ncclResult_t result, Describe&& describe) {
    if (result == ncclSuccess && comm_ != nullptr && async_state() == ncclSuccess) return;
    complete(result, describe());
  }
  // Whether event has completed, without blocking; throws as wait() on an asynchronous error
  // or once the communicator was aborted (the work behind event may then be cut short).
  bool done(cudaEvent_t event, const std::string& what);
  // Waits until event has completed, polling the asynchronous error state and the timeout.
  void wait(cudaEvent_t event, const std::string& what);
  // ncclCommFinalize, polled until every enqueued NCCL operation has completed (bounded by the
  // timeout; aborts on failure). Idempotent; a no-op once aborted.
  void finalize();
  void abort() noexcept;
  bool aborted() const { return comm_ == nullptr; }

 private:
  [[noreturn]] void fail(ncclResult_t result, const std::string& what);
  [[noreturn]] void time_out(const std::string& what);
  ncclResult_t async_state();
  // A rank of the communicator left the job (mpi_base/peer_check.h): aborts and throws gjPeerLost.
  void check_peers();
  void watch(int device);
  // Caller holds mutex_. The communicator to abort (now marked aborted), or nullptr when healthy.
  ncclComm_t watch_once();
  // Under the lock: the communicator counts as aborted (calls fail with abort_reason_); returns
  // the handle for watch() to ncclCommAbort once the lock is released.
  ncclComm_t mark_aborted();

  struct Pending {
    cudaEvent_t event;
    std::chrono::steady_clock::time_point enqueued;
    Operation op;
  };

  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  long timeout_ms_ = 0;
  bool finalized_ = false;
  std::string abort_reason_;
  gjResult_t watchdog_code_ = gjSuccess;  // what the watchdog found; reported once
  mutable bool watchdog_reported_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread watchdog_;
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> spare_events_;
  // The gj communicator's peer check (it outlives this communicator); null: none.
  const peer::PeerCheck* peers_ = nullptr;
};

}  // namespace gj::nccl
