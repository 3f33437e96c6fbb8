#include "comms.h"

#include <mutex>
#include <unordered_map>

namespace gj_tf {
namespace {

std::mutex g_mutex;
std::unordered_map<int64_t, Comm>& table() {
  static auto* t = new std::unordered_map<int64_t, Comm>();  // never destroyed: ops may run at exit
  return *t;
}

}  // namespace

bool comm_of(int64_t id, Comm* out, std::string* why) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = table().find(id);
  if (it == table().end()) {
    *why = "process set " + std::to_string(id) +
           " is not registered in this process (shutdown() ran, or the set was removed); call "
           "add_process_set, and make the op again after init()";
    return false;
  }
  *out = it->second;
  return true;
}

std::string library_error(const char* call, gjResult_t code, gjComm_t comm) {
  std::string out = std::string(call) + " failed: " + gjGetErrorString(code);
  const char* detail = gjGetLastError(comm);
  if (detail != nullptr && *detail != '\0') out += std::string(": ") + detail;
  return out;
}

}  // namespace gj_tf

extern "C" int gj_tf_set_comm(int64_t process_set_id, void* handle) {
  std::lock_guard<std::mutex> lock(gj_tf::g_mutex);
  if (handle == nullptr) {
    gj_tf::table().erase(process_set_id);
    return 0;
  }
  gj_tf::Comm c;
  c.handle = static_cast<gjComm_t>(handle);
  if (gjCommRank(c.handle, &c.rank) != gjSuccess || gjCommSize(c.handle, &c.size) != gjSuccess) return 1;
  gj_tf::table()[process_set_id] = c;
  return 0;
}
