#include "registry.h"

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

}  // namespace

void add(gjComm* comm) {
  std::lock_guard<std::mutex> lock(mutex());
  live().insert(comm);
}

bool remove(gjComm* comm) {
  std::lock_guard<std::mutex> lock(mutex());
  return live().erase(comm) > 0;
}

bool is_live(const gjComm* comm) {
  std::lock_guard<std::mutex> lock(mutex());
  return live().count(comm) > 0;
}

std::size_t live_count() {
  std::lock_guard<std::mutex> lock(mutex());
  return live().size();
}

}  // namespace gj::registry
