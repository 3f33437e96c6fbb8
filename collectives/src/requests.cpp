#include "requests.h"

#include <cstdio>
#include <mutex>
#include <unordered_set>

#include "error.h"

struct gjRequest {
  gjComm* comm = nullptr;
  std::shared_ptr<gj::Completion> host;  // host request, or a settled polled one
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

}  // namespace

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
    if (request->host) {
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
