// Nonblocking request handles (gjRequest_t). A request is either a host one (a Completion the
// communicator's queue finishes) or a polled one (polled.h: a device backend's completion
// handle, e.g. a CUDA event, or a control channel request). Live handles are kept in a registry, so a finished, freed or foreign handle is
// gjInvalidUsage instead of a dereference.
#pragma once

#include <memory>
#include <string>

#include "polled.h"
#include "gj/collectives.h"
#include "queue.h"

struct gjComm;

namespace gj::requests {

gjRequest_t make_host(gjComm* comm, std::shared_ptr<Completion> done);
// handle from source (a backend's record_completion, the control channel); nullptr = complete
// already.
gjRequest_t make_polled(gjComm* comm, Polled& source, void* handle);

// The request's communicator (for its last-error message), or null once it is destroyed.
// Throws gjInvalidUsage naming call when request is not a live request.
gjComm* comm_of(const char* call, gjRequest_t request);
// Never blocks: false while running; true when complete, after which request is freed and
// *code / *message hold the operation's result.
bool test(const char* call, gjRequest_t request, gjResult_t* code, std::string* message);
// Blocks until complete, frees request, returns the operation's result.
gjResult_t wait(const char* call, gjRequest_t request, std::string* message);
// Before comm's backends go: waits for its polled requests (or, with wait false, abandons
// them as failed) and keeps their results, so the handles stay valid (gjWait/gjTest then
// report them) without the backend.
void settle(gjComm* comm, bool wait) noexcept;

}  // namespace gj::requests
