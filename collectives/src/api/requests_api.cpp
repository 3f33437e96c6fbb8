// Requests and the control channel: gjTest, gjWait (requests.h keeps the handles) and
// gjIcontrolMax (control.h).
#include <mpi.h>

#include <cstdint>
#include <string>

#include "api/entry.h"
#include "comm.h"
#include "registry.h"
#include "requests.h"
#include "validate.h"

namespace {

using gj::Error;
using gj::entry::guarded;

}  // namespace

extern "C" {

gjResult_t gjIcontrolMax(int64_t* values, size_t count, gjComm_t comm, gjRequest_t* request) {
  static constexpr const char* call = "gjIcontrolMax";
  return guarded(call, comm, [&] {
    // The documented order of every nonblocking call: the request pointer, then the communicator.
    gj::validate::out_pointer(call, "request", request);
    *request = nullptr;
    gjComm* c = gj::entry::live(call, comm);
    constexpr std::size_t kMaxCount = std::size_t{1} << 20;
    if (count == 0 || count > kMaxCount) {
      throw Error(gjInvalidArgument, std::string(call) + ": count=" + std::to_string(count) +
                                         " is out of range; pass 1 to " + std::to_string(kMaxCount) + " values");
    }
    if (values == nullptr)
      throw Error(gjInvalidArgument, std::string(call) + ": values=NULL with count=" + std::to_string(count));
    if (c->thread_level < MPI_THREAD_MULTIPLE) {
      throw Error(gjInvalidUsage, std::string(call) +
                                      ": the control channel is polled while the progress thread "
                                      "runs MPI, which needs MPI initialized with "
                                      "MPI_THREAD_MULTIPLE; call MPI_Init_thread with "
                                      "MPI_THREAD_MULTIPLE, or let gjCommInitWorld initialize MPI");
    }
    *request = gj::requests::make_polled(c, *c->control, c->control->start_max(call, values, count));
  });
}

gjResult_t gjTest(gjRequest_t request, int* done) {
  static constexpr const char* call = "gjTest";
  return guarded(call, nullptr, [&] {
    gj::validate::out_pointer(call, "done", done);
    *done = 0;
    gjComm_t comm = gj::requests::comm_of(call, request);
    gjResult_t code = gjSuccess;
    std::string message;
    if (!gj::requests::test(call, request, &code, &message)) return;
    *done = 1;
    if (code != gjSuccess) {
      gj::record_failure(call, comm, message);  // comm's last error too, while comm is live
      throw Error(code, message);
    }
  });
}

gjResult_t gjWait(gjRequest_t request) {
  static constexpr const char* call = "gjWait";
  return guarded(call, nullptr, [&] {
    gjComm_t comm = gj::requests::comm_of(call, request);
    std::string message;
    const gjResult_t code = gj::requests::wait(call, request, &message);
    if (code != gjSuccess) {
      gj::record_failure(call, comm, message);  // comm's last error too, while comm is live
      throw Error(code, message);
    }
  });
}

}  // extern "C"
