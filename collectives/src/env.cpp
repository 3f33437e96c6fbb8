#include "env.h"

#include <cstring>

extern char** environ;

namespace gj {

namespace {

// The variables outside GJ_COLL_* the library reads (config.h, NcclEnv; GJ_RANK_MONITOR_FD, the
// rank wrapper's socket: peer/monitor.h).
constexpr const char* kOtherNames[] = {"GJ_RANK_MONITOR_FD", "GJ_NCCL_LIBRARY", "NCCL_MULTI_RANK_GPU_ENABLE", "NCCL_HOSTID", "CUDA_HOME",
                                       "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH", "HOME"};

bool wanted(const std::string& name) {
  if (name.compare(0, 8, "GJ_COLL_") == 0) return true;
  for (const char* other : kOtherNames)
    if (name == other) return true;
  return false;
}

}  // namespace

std::map<std::string, std::string> snapshot_coll_env() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    std::string name(*e, static_cast<std::size_t>(eq - *e));
    if (wanted(name)) env.emplace(std::move(name), std::string(eq + 1));
  }
  return env;
}

}  // namespace gj
