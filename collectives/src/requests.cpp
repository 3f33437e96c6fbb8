#include "requests.h"

#include <cstdio>
#include <mutex>
#include <unordered_set>

#include "error.h"

struct gjRequest {
  gjComm* comm = nullptr;
  std::shared_ptr<gj::Completion> host;  // host request, or a settled polled one
  std::shared_ptr<gj::requests::DeviceTail> tail;  // a deferred device request: after host
  gj::Polled* polled = nullptr;          // polled request: what completes it, and its handle
  void* handle = nullptr;
};

namespace gj::requests {
namespace {

std::mutex& mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<gjRequest*>& live() {
  static std::unordered_set<gjRequest*> s;
  return s;
}

gjRequest_t add(std::unique_ptr<gjRequest> r) {
  std::lock_guard<std::mutex> lock(mutex());
  live().insert(r.get());
  return r.release();
}

// With the registry lock held.
void require_live(const char* call, gjRequest_t r) {
  if (r == nullptr) throw Error(gjInvalidUsage, std::string(call) + ": request=NULL");
  if (live().count(r) == 0) {
    char address[32];
    std::snprintf(address, sizeof address, "%p", static_cast<void*>(r));
    throw Error(gjInvalidUsage, std::string(call) + ": request=" + address +
                                    " is not a live request (already completed by gjWait/gjTest, or never issued)");
  }
}

// A polled request's outcome, as the host path reports it.
std::pair<gjResult_t, std::string> polled_outcome(gjRequest& r, bool block, bool* done) {
  try {
    if (block) r.polled->completion_wait(r.handle);
    *done = block || r.polled->completion_done(r.handle);
    return {gjSuccess, ""};
  } catch (const Error& e) {
    *done = true;
    return {e.code(), e.what()};
  }
}

// A deferred device request's outcome once its queued item finished successfully: its handle's.
std::pair<gjResult_t, std::string> tail_outcome(const DeviceTail& tail, bool block, bool* done) {
  const auto [source, handle] = tail.get();
  if (source == nullptr) {
    *done = true;
    return {gjSuccess, ""};
  }
  try {
    if (block) source->completion_wait(handle);
    *done = block || source->completion_done(handle);
    return {gjSuccess, ""};
  } catch (const Error& e) {
    *done = true;
    return {e.code(), e.what()};
  }
}

}  // namespace

void DeviceTail::set(Polled& source, void* handle) {
  std::lock_guard<std::mutex> lock(m_);
  if (abandoned_) {
    source.completion_release(handle);
    return;
  }
  source_ = &source;
  handle_ = handle;
}

std::pair<Polled*, void*> DeviceTail::get() const {
  std::lock_guard<std::mutex> lock(m_);
  return {source_, handle_};
}

void DeviceTail::abandon() noexcept {
  std::lock_guard<std::mutex> lock(m_);
  abandoned_ = true;
  if (source_ != nullptr) source_->completion_release(handle_);
  source_ = nullptr;
  handle_ = nullptr;
}

namespace {

// A deferred request's result, the tail's handle released once it is complete.
bool deferred_outcome(gjRequest& r, bool block, gjResult_t* code, std::string* message) {
  if (!block && !r.host->done()) return false;
  *code = r.host->wait(message);
  if (*code != gjSuccess) {
    r.tail->abandon();
    return true;
  }
  bool done = false;
  auto result = tail_outcome(*r.tail, block, &done);
  if (!done) return false;
  r.tail->abandon();  // releases the handle
  *code = result.first;
  *message = std::move(result.second);
  return true;
}

}  // namespace

gjRequest_t make_deferred(gjComm* comm, std::shared_ptr<Completion> done, std::shared_ptr<DeviceTail> tail) {
  auto r = std::make_unique<gjRequest>();
  r->comm = comm;
  r->host = std::move(done);
  r->tail = std::move(tail);
  return add(std::move(r));
}

gjRequest_t make_host(gjComm* comm, std::shared_ptr<Completion> done) {
  auto r = std::make_unique<gjRequest>();
  r->comm = comm;
  r->host = std::move(done);
  return add(std::move(r));
}

gjRequest_t make_polled(gjComm* comm, Polled& source, void* handle) {
  auto r = std::make_unique<gjRequest>();
  r->comm = comm;
  if (handle == nullptr) {
    r->host = std::make_shared<Completion>();
    r->host->finish(gjSuccess, "");
  } else {
    r->polled = &source;
    r->handle = handle;
  }
  return add(std::move(r));
}

gjComm* comm_of(const char* call, gjRequest_t request) {
  std::lock_guard<std::mutex> lock(mutex());
  require_live(call, request);
  return request->comm;
}

bool test(const char* call, gjRequest_t request, gjResult_t* code, std::string* message) {
  std::unique_ptr<gjRequest> owned;
  {
    std::lock_guard<std::mutex> lock(mutex());
    require_live(call, request);
    if (request->tail) {
      if (!deferred_outcome(*request, false, code, message)) return false;
    } else if (request->host) {
      if (!request->host->done()) return false;
      *code = request->host->wait(message);
    } else {
      bool done = false;
      const auto result = polled_outcome(*request, false, &done);
      if (!done) return false;
      *code = result.first;
      *message = result.second;
      request->polled->completion_release(request->handle);
    }
    live().erase(request);
    owned.reset(request);
  }
  return true;
}

gjResult_t wait(const char* call, gjRequest_t request, std::string* message) {
  std::unique_ptr<gjRequest> owned;
  {
    std::lock_guard<std::mutex> lock(mutex());
    require_live(call, request);
    live().erase(request);  // from here on this thread owns it: a second wait is invalid
    owned.reset(request);
  }
  if (owned->tail) {
    gjResult_t code = gjSuccess;
    (void)deferred_outcome(*owned, true, &code, message);
    return code;
  }
  if (owned->host) return owned->host->wait(message);
  bool done = false;
  const auto result = polled_outcome(*owned, true, &done);
  owned->polled->completion_release(owned->handle);
  *message = result.second;
  return result.first;
}

void settle(gjComm* comm, bool wait) noexcept {
  std::lock_guard<std::mutex> lock(mutex());
  for (gjRequest* r : live()) {
    if (r->comm != comm) continue;
    r->comm = nullptr;
    if (r->tail) {
      // The queue finished its item before this (drained or aborted): the handle is set or
      // never will be. Settled with its result, or abandoned.
      gjResult_t code = gjInvalidUsage;
      std::string message = "the communicator was aborted";
      if (wait) (void)deferred_outcome(*r, true, &code, &message);
      else r->tail->abandon();
      r->tail.reset();
      r->host = std::make_shared<Completion>();
      r->host->finish(code, message);
      continue;
    }
    if (r->host) continue;  // the queue finishes host requests before it goes
    bool done = false;
    const auto result = wait ? polled_outcome(*r, true, &done)
                             : std::pair<gjResult_t, std::string>{gjInvalidUsage, "the communicator was aborted"};
    r->polled->completion_release(r->handle);
    r->polled = nullptr;
    r->handle = nullptr;
    r->host = std::make_shared<Completion>();
    r->host->finish(result.first, result.second);
  }
}

}  // namespace gj::requests
