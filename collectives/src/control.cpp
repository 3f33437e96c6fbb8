#include "control.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "error.h"
#include "mpi_base/mpi_check.h"

namespace gj {

// The collective runs on a buffer of its own, copied out at completion, so a request given
// up on never writes into its caller's memory.
struct ControlChannel::Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<std::int64_t> buffer;
  std::int64_t* out = nullptr;
  std::string call;
  bool done = false;
};

ControlChannel::ControlChannel(MPI_Comm comm, long timeout_ms) : timeout_ms_(timeout_ms) {
  mpi_check(MPI_Comm_dup(comm, &comm_), "gj control channel: MPI_Comm_dup");
  mpi_check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "gj control channel: MPI_Comm_set_errhandler");
}

ControlChannel::~ControlChannel() {
  // A request given up on may still complete inside MPI: its communicator and buffers stay.
  if (abandoned_.empty() && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void ControlChannel::abort() noexcept {
  std::lock_guard<std::mutex> lock(m_);
  if (stopped_.empty()) stopped_ = "the communicator was aborted";
  comm_ = MPI_COMM_NULL;  // deliberately leaked, as the communicator's own (comm.h)
}

void* ControlChannel::start_max(const char* call, std::int64_t* values, std::size_t count) {
  std::lock_guard<std::mutex> lock(m_);
  if (!stopped_.empty()) {
    throw Error(gjInvalidUsage, std::string(call) + ": the communicator's control channel stopped (" + stopped_ +
                                    "); destroy the communicator and create a new one");
  }
  auto p = std::make_unique<Pending>();
  p->buffer.assign(values, values + count);
  p->out = values;
  p->call = call;
  mpi_check(MPI_Iallreduce(MPI_IN_PLACE, p->buffer.data(), static_cast<int>(count), MPI_INT64_T, MPI_MAX, comm_, &p->request),
            std::string(call) + ": MPI_Iallreduce(count=" + std::to_string(count) + ", MPI_INT64_T, MPI_MAX)");
  return p.release();
}

bool ControlChannel::completion_done(void* handle) {
  Pending* p = static_cast<Pending*>(handle);
  if (p->done) return true;
  int flag = 0;
  mpi_check(MPI_Test(&p->request, &flag, MPI_STATUS_IGNORE), p->call + ": MPI_Test");
  if (flag == 0) return false;
  std::copy(p->buffer.begin(), p->buffer.end(), p->out);
  p->done = true;
  return true;
}

void ControlChannel::completion_wait(void* handle) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto nap = std::chrono::microseconds(0);
  while (!completion_done(handle)) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start).count();
    if (timeout_ms_ > 0 && waited >= timeout_ms_) {
      Pending* p = static_cast<Pending*>(handle);
      throw Error(gjTimeout, p->call + ": not every rank reached this control collective (count=" +
                                 std::to_string(p->buffer.size()) + ") within " + std::to_string(timeout_ms_) +
                                 " ms (GJ_COLL_TIMEOUT_MS); a rank that never calls it, or never gets there, "
                                 "keeps the others waiting");
    }
    // MPI progresses the collective only inside MPI_Test: poll at once for a millisecond
    // (a barrier every rank reaches together), then every 50 us up to 1 ms.
    if (waited < 1) {
      std::this_thread::yield();
      continue;
    }
    nap = std::min(std::chrono::microseconds(1000), nap + std::chrono::microseconds(50));
    std::this_thread::sleep_for(nap);
  }
}

void ControlChannel::completion_release(void* handle) noexcept {
  Pending* p = static_cast<Pending*>(handle);
  if (p->done) {
    delete p;
    return;
  }
  std::lock_guard<std::mutex> lock(m_);
  if (stopped_.empty()) stopped_ = p->call + " was given up on before it completed";
  abandoned_.push_back(p);  // MPI may still write its buffer: the request outlives the handle
}

}  // namespace gj
