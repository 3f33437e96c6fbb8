#include "mpi/rendezvous.h"

#include <chrono>
#include <string>
#include <thread>

#include "error.h"
#include "mpi/mpi_check.h"

namespace gj {

void rendezvous(MPI_Comm comm, long timeout_ms, const char* call) {
  using Clock = std::chrono::steady_clock;
  MPI_Request req = MPI_REQUEST_NULL;
  mpi_check(MPI_Ibarrier(comm, &req), std::string(call) + ": MPI_Ibarrier");
  const Clock::time_point start = Clock::now();
  // A barrier is a synchronisation point, not a hot path: a few quick polls for peers that
  // are already there, then sleeps of up to 1 ms that leave the CPU to the rank's threads.
  auto pause = std::chrono::microseconds(0);
  for (;;) {
    int done = 0;
    mpi_check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), std::string(call) + ": MPI_Test");
    if (done) return;
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    if (timeout_ms > 0 && waited >= timeout_ms) {
      throw Error(gjTimeout, std::string(call) + ": waited " + std::to_string(waited) +
                                 " ms for every rank to arrive, past GJ_COLL_TIMEOUT_MS=" + std::to_string(timeout_ms) +
                                 "; a peer has not called it (the rendezvous is unusable now: destroy the "
                                 "communicator)");
    }
    if (pause.count() == 0) std::this_thread::yield();
    else std::this_thread::sleep_for(pause);
    pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(20));
  }
}

}  // namespace gj
