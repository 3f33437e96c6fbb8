// Nonblocking request handles (gjRequest_t). A request is either a host one (a Completion the
// communicator's queue finishes) or a polled one (polled.h: a device backend's completion
// handle, e.g. a CUDA event, or a control channel request). Live handles are kept in a registry, so a finished, freed or foreign handle is
// gjInvalidUsage instead of a dereference.
#pragma once

#include <memory>
#include <mutex>
#include <utility>
#include <string>

#include "polled.h"
#include "gj/collectives.h"
#include "queue.h"

struct gjComm;

namespace gj::requests {

gjRequest_t make_host(gjComm* comm, std::shared_ptr<Completion> done);

// The device part of a deferred device request: the communicator's progress thread enqueues
// the call's work on the backend's own stream, then sets the completion handle its backend
// recorded there (set). The request completes when the queued item has (Completion) and then
// that handle has.
class DeviceTail {
 public:
  // From the progress thread, once the work is enqueued. A request settled meanwhile
  // (abandoned by gjCommAbort) releases the handle at once.
  void set(Polled& source, void* handle);
  // What set() gave; (nullptr, nullptr) before. Read only after the Completion finished.
  std::pair<Polled*, void*> get() const;
  // The request no longer wants the handle: released now if set, or by set().
  void abandon() noexcept;

 private:
  mutable std::mutex m_;
  Polled* source_ = nullptr;
  void* handle_ = nullptr;
  bool abandoned_ = false;
};
gjRequest_t make_deferred(gjComm* comm, std::shared_ptr<Completion> done, std::shared_ptr<DeviceTail> tail);
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
