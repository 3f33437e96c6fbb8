// The watchdog of one NCCL communicator: a thread that enforces GJ_COLL_TIMEOUT_MS on
// enqueued device collectives and notices NCCL's asynchronous errors between gj calls. Each
// enqueued operation records an event (Comm::track); the thread polls the oldest pending event
// and ncclCommGetAsyncError every few milliseconds. A dead or stalled peer (an event pending
// longer than the timeout) or an asynchronous error aborts the communicator (ncclCommAbort,
// which also ends the NCCL kernels stuck on the user's stream); the next gj call then reports it
// as gjTimeout / gjNcclError, and every later one as gjInvalidUsage.
#pragma once

#include <nccl.h>

#include <chrono>

namespace gj::nccl {

enum class Verdict { Healthy, AsyncError, TimedOut };

// Pure. oldest_pending_ms < 0: nothing pending. timeout_ms <= 0: no timeout.
Verdict judge(ncclResult_t async_state, long oldest_pending_ms, long timeout_ms);

// How often the thread looks: often enough that a timeout is seen within a few percent of it,
// rarely enough to cost nothing (it sleeps in between).
inline std::chrono::milliseconds watch_period(long timeout_ms) {
  if (timeout_ms <= 0) return std::chrono::milliseconds(100);
  return std::chrono::milliseconds(timeout_ms / 50 < 2 ? 2 : (timeout_ms / 50 > 100 ? 100 : timeout_ms / 50));
}

}  // namespace gj::nccl
