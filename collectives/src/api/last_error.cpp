// gjGetErrorString, gjGetLastError and what feeds them (last_error.h).
#include "api/last_error.h"

#include <cstdio>
#include <memory>
#include <string>

#include "api/entry.h"
#include "comm.h"
#include "dtype.h"
#include "registry.h"

namespace gj {
namespace {

// This thread's last failure, whatever the communicator.
thread_local std::string t_last_error;
// What gjGetLastError(comm) returned last on this thread: a copy of comm's text, so the
// pointer stays valid while other threads fail calls on comm or destroy it.
thread_local std::string t_returned;

}  // namespace

void record_failure(const char* call, gjComm* comm, const std::string& detail) {
  const std::string prefix = std::string(call) + ": ";
  t_last_error = detail.compare(0, prefix.size(), prefix) == 0 ? detail : prefix + detail;
  if (comm == nullptr) return;
  auto set = [](gjComm* c, void* text) { c->last_error.set(*static_cast<const std::string*>(text)); };
  registry::with_live(comm, set, &t_last_error);
}

namespace entry {

gjComm* live(const char* call, gjComm_t comm) {
  if (comm == nullptr) {
    throw Error(gjInvalidUsage, std::string(call) + ": comm=NULL; create one with gjCommInitWorld or gjCommInitMpi");
  }
  if (!registry::is_live(comm)) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(comm));
    throw Error(gjInvalidUsage, std::string(call) + ": comm=" + address +
                                    " is not a live communicator (destroyed, aborted or never created)");
  }
  return comm;
}

std::unique_ptr<gjComm> take(const char* call, gjComm_t comm) {
  live(call, comm);                               // the message for NULL and unknown handles
  if (!registry::remove(comm)) live(call, comm);  // another thread took it since: throws
  return std::unique_ptr<gjComm>(comm);
}

}  // namespace entry
}  // namespace gj

extern "C" {

const char* gjGetErrorString(gjResult_t result) {
  switch (gj::enum_bits(result)) {
    case gjSuccess:
      return "success";
    case gjInvalidArgument:
      return "invalid argument";
    case gjInvalidUsage:
      return "invalid usage";
    case gjUnsupported:
      return "unsupported";
    case gjSystemError:
      return "system error";
    case gjMpiError:
      return "MPI error";
    case gjNcclError:
      return "NCCL error";
    case gjCudaError:
      return "CUDA error";
    case gjTimeout:
      return "timeout";
    case gjInternalError:
      return "internal error";
    case gjPeerLost:
      return "peer lost";
    default:
      return "unknown result code";
  }
}

const char* gjGetLastError(gjComm_t comm) {
  auto copy = [](gjComm* c, void* out) { *static_cast<std::string*>(out) = c->last_error.get(); };
  if (comm != nullptr && gj::registry::with_live(comm, copy, &gj::t_returned)) return gj::t_returned.c_str();
  return gj::t_last_error.c_str();
}

}  // extern "C"
