#include "registry.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_set>

namespace gj::registry {
namespace {

std::mutex& mutex() {
  static std::mutex m;
  return m;
}
std::unordered_set<const gjComm*>& live() {
  static std::unordered_set<const gjComm*> s;
  return s;
}
// Bumped (under the mutex) by every add and remove. is_live runs on every collective: a
// thread remembers the last communicator it found live and the version it saw then, and
// skips the lock and the lookup while nothing was added or removed since (docs/benchmarks.md:
// per-call overhead of small allreduces).
std::atomic<std::uint64_t> g_version{1};
thread_local const gjComm* t_last_live = nullptr;
thread_local std::uint64_t t_last_version = 0;

}  // namespace

void add(gjComm* comm) {
  std::lock_guard<std::mutex> lock(mutex());
  live().insert(comm);
  g_version.fetch_add(1, std::memory_order_acq_rel);
}

bool remove(gjComm* comm) {
  std::lock_guard<std::mutex> lock(mutex());
  g_version.fetch_add(1, std::memory_order_acq_rel);
  return live().erase(comm) > 0;
}

bool is_live(const gjComm* comm) {
  const std::uint64_t version = g_version.load(std::memory_order_acquire);
  if (comm != nullptr && comm == t_last_live && version == t_last_version) return true;
  std::lock_guard<std::mutex> lock(mutex());
  const bool found = live().count(comm) > 0;
  if (found) {
    t_last_live = comm;
    t_last_version = g_version.load(std::memory_order_relaxed);
  }
  return found;
}

bool with_live(gjComm* comm, void (*fn)(gjComm*, void*), void* arg) {
  std::lock_guard<std::mutex> lock(mutex());
  if (live().count(comm) == 0) return false;
  fn(comm, arg);
  return true;
}

std::size_t live_count() {
  std::lock_guard<std::mutex> lock(mutex());
  return live().size();
}

}  // namespace gj::registry
