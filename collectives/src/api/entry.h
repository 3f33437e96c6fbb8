// The frame every C entry point runs in (api/*.cpp): exceptions become a result code and the
// last-error text (last_error.h), and handles are checked against the registry before use.
// Nothing thrown inside the library crosses an entry point.
#pragma once

#include <memory>
#include <new>
#include <string>

#include "api/last_error.h"
#include "comm.h"
#include "error.h"
#include "gj/collectives.h"

namespace gj::entry {

// Runs body; an exception becomes its result code and the call's last error.
template <class Body>
gjResult_t guarded(const char* call, gjComm_t comm, Body&& body) noexcept {
  try {
    body();
    return gjSuccess;
  } catch (const Error& e) {
    record_failure(call, comm, e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    record_failure(call, comm, "out of memory");
    return gjSystemError;
  } catch (const std::exception& e) {
    record_failure(call, comm, e.what());
    return gjInternalError;
  } catch (...) {
    record_failure(call, comm, "unknown exception");
    return gjInternalError;
  }
}

// comm, when it is a live communicator; else throws gjInvalidUsage naming call and the handle.
gjComm* live(const char* call, gjComm_t comm);

// Takes comm out of the registry and hands over its ownership: the one check that decides
// which of several concurrent gjCommDestroy / gjCommAbort calls tears it down (the others
// throw gjInvalidUsage as for any handle that is not live).
std::unique_ptr<gjComm> take(const char* call, gjComm_t comm);

}  // namespace gj::entry
