// Completing an MPI request by polling, so that a collective whose peer left the job fails
// (gjPeerLost, mpi_base/peer_check.h) instead of waiting for ever: a blocking MPI collective can neither
// time out nor be cancelled, so the host paths start the nonblocking one and wait here.
#pragma once

#include <mpi.h>

#include <string>

#include "mpi_base/mpi_check.h"

namespace gj {

// Polls req until it completes; between polls asks the running collective's peer check
// (peer::t_current, when a rank of the job is known lost). Returns MPI_Test's error code
// (MPI_SUCCESS once complete); throws gj::Error(gjPeerLost), leaving the request to MPI (a
// collective request cannot be cancelled; its peer will never complete it).
int wait_polled(MPI_Request& req);
// The same for several requests (point-to-point exchanges): all of them, or any one (its
// index in *index, MPI_UNDEFINED when none is active).
int wait_all_polled(int n, MPI_Request* reqs);
int wait_any_polled(int n, MPI_Request* reqs, int* index);

// start(&req) starts a nonblocking MPI call and returns its error code; then the wait. A
// failure of either goes to mpi_check with what() (called only on failure).
template <class Start, class What>
void run_polled(Start&& start, What&& what) {
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = start(&req);
  if (rc == MPI_SUCCESS) rc = wait_polled(req);
  if (rc != MPI_SUCCESS) mpi_check(rc, std::string(what()));
}

}  // namespace gj
