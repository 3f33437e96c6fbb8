// gjRendezvous's wait: an MPI_Ibarrier on the communicator's rendezvous duplicate, polled
// until every rank arrived or GJ_COLL_TIMEOUT_MS passed (a plain MPI_Barrier could wait for
// ever for a peer that never comes).
#pragma once

#include <mpi.h>

namespace gj {

// Returns once every rank of comm has called it. timeout_ms <= 0: waits for ever. Throws
// gj::Error(gjTimeout) naming call and the timeout when the peers did not all arrive in time;
// the barrier is then still pending and comm must not be used again.
void rendezvous(MPI_Comm comm, long timeout_ms, const char* call);

}  // namespace gj
