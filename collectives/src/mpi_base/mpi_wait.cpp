#include "mpi_base/mpi_wait.h"

#include <sched.h>

#include "mpi_base/peer_check.h"

namespace gj {
namespace {

// Polls before the wait starts yielding the CPU between polls: a blocking MPI call spins as
// long, so small collectives keep their latency; a long wait (a late peer) leaves the CPU to
// this rank's other threads and to ranks sharing it.
constexpr unsigned kSpinPolls = 1u << 14;

void ask_peers() {
  if (peer::lost_epoch() != 0 && peer::t_current != nullptr) peer::t_current->check_any();
}

}  // namespace

int wait_polled(MPI_Request& req) {
  int done = 0;
  for (unsigned n = 0;; ++n) {
    const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    ask_peers();
    if (n >= kSpinPolls) sched_yield();
  }
}

int wait_all_polled(int count, MPI_Request* reqs) {
  int done = 0;
  for (unsigned n = 0;; ++n) {
    const int rc = MPI_Testall(count, reqs, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    ask_peers();
    if (n >= kSpinPolls) sched_yield();
  }
}

int wait_any_polled(int count, MPI_Request* reqs, int* index) {
  int done = 0;
  for (unsigned n = 0;; ++n) {
    const int rc = MPI_Testany(count, reqs, index, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || done) return rc;
    ask_peers();
    if (n >= kSpinPolls) sched_yield();
  }
}

}  // namespace gj
