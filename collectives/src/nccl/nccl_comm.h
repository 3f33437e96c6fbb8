// One NCCL communicator in non-blocking mode, so that no NCCL call can block this thread longer
// than the configured timeout: initialization, connection setup on the first collectives and
// finalization all return ncclInProgress and are polled here. Every failure becomes a gj::Error
// naming the operation; asynchronous errors and timeouts abort the communicator (ncclCommAbort),
// after which every call throws gjInvalidUsage naming the first failure.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <string>

namespace gj::nccl {

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

  // Throws gjInvalidUsage once the communicator was aborted.
  void ensure_usable(const std::string& what) const;
  // Completes an NCCL call: polls while ncclInProgress, then checks the result and the
  // communicator's asynchronous error state.
  void complete(ncclResult_t result, const std::string& what);
  // The same for the hot path: describe() (returning the operation's name) runs only on failure.
  template <typename Describe>
  void complete_lazy(ncclResult_t result, Describe&& describe) {
    if (result == ncclSuccess && comm_ != nullptr && async_state() == ncclSuccess) return;
    complete(result, describe());
  }
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

  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  long timeout_ms_ = 0;
  bool finalized_ = false;
  std::string abort_reason_;
};

}  // namespace gj::nccl
