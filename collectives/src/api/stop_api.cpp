// gjStopRequested: the job's stop request (GJ_STOP_GRACE, docs/agent.md "Restarts and stops")
// agreed on by every rank of a communicator. Each rank's wrapper passes the master's `stop` to
// its program at its own moment (peer/monitor.h: stop_requested_locally), so one rank may see it
// a step before another; one MAX over the control channel makes every rank answer the same at
// the same call, and the training loop then stops at the same step everywhere.
#include <mpi.h>

#include <cstdint>
#include <string>

#include "api/entry.h"
#include "comm.h"
#include "control.h"
#include "peer/monitor.h"
#include "requests.h"
#include "validate.h"

extern "C" {

gjResult_t gjStopRequested(gjComm_t comm, int* stop) {
  static constexpr const char* call = "gjStopRequested";
  return gj::entry::guarded(call, comm, [&] {
    gj::validate::out_pointer(call, "stop", stop);
    *stop = 0;
    gjComm* c = gj::entry::live(call, comm);
    if (c->thread_level < MPI_THREAD_MULTIPLE) {
      throw gj::Error(gjInvalidUsage, std::string(call) +
                                          ": the control channel needs MPI initialized with MPI_THREAD_MULTIPLE; "
                                          "call MPI_Init_thread with MPI_THREAD_MULTIPLE, or let gjCommInitWorld "
                                          "initialize MPI");
    }
    std::int64_t value = gj::peer::stop_requested_locally() ? 1 : 0;
    gjRequest_t request = gj::requests::make_polled(c, *c->control, c->control->start_max(call, &value, 1));
    std::string message;
    const gjResult_t code = gj::requests::wait(call, request, &message);
    if (code != gjSuccess) throw gj::Error(code, message);
    *stop = value > 0 ? 1 : 0;
  });
}

}  // extern "C"
