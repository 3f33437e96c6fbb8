// A communicator's control channel: small int64 MAX allreduces on an MPI communicator of their
// own (a duplicate), ordered among themselves but not with the communicator's collectives, so
// one completes while this rank's queued collectives still wait for their peers. gj.torch's
// barrier runs here: Horovod's barrier does not wait for the collectives in flight, and a rank
// inside join() takes part in it by keeping one control request posted.
//
// Nothing here runs on a thread of its own: a request is an MPI_Iallreduce that the caller
// polls (gjTest: MPI_Test, no bound) or waits for (gjWait: MPI_Test with yields and short
// sleeps, up to GJ_COLL_TIMEOUT_MS, then gjTimeout). MPI lets a nonblocking collective be
// neither cancelled nor freed before it completes, so one given up on leaves the channel
// stopped: later calls fail, and its request, buffer (its own, not the caller's) and MPI
// communicator are never freed, since MPI may still complete it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "polled.h"

namespace gj {

class ControlChannel final : public Polled {
 public:
  // Collective over comm (MPI_Comm_dup). timeout_ms: gjWait's bound (0 = for ever).
  ControlChannel(MPI_Comm comm, long timeout_ms);
  ~ControlChannel() override;  // MPI_Comm_free, unless a request was given up on
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Starts the MAX allreduce of values[0..count) in place; returns its handle. The result is
  // written to values when a poll or wait finds the request complete. Throws gjInvalidUsage
  // once the channel stopped.
  void* start_max(const char* call, std::int64_t* values, std::size_t count);

  bool completion_done(void* handle) override;
  void completion_wait(void* handle) override;
  void completion_release(void* handle) noexcept override;
  // Error path (gjCommAbort): the MPI communicator is kept, as the communicator's own is.
  void abort() noexcept;

 private:
  struct Pending;
  MPI_Comm comm_ = MPI_COMM_NULL;
  const long timeout_ms_;
  std::mutex m_;
  std::string stopped_;  // why the channel stopped, or empty
  std::vector<Pending*> abandoned_;
};

}  // namespace gj
