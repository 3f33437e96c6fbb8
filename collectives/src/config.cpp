// parse_config: environment snapshot -> Config. Pure; the snapshot is taken in env.cpp.
#include "config.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "bool_word.h"
#include "error.h"

namespace gj {
namespace {

using Env = std::map<std::string, std::string>;

// An unset or empty variable means "use the default".
const std::string* lookup(const Env& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end() || it->second.empty()) return nullptr;
  return &it->second;
}

[[noreturn]] void reject(const char* name, const std::string& value, const char* accepted) {
  throw Error(gjInvalidArgument,
              std::string(name) + "=\"" + value + "\" is not valid; accepted: " + accepted);
}

// Digits only (no sign, no spaces): strtoull would silently accept "-1" as a huge number.
bool parse_unsigned(const std::string& text, unsigned long long* out) {
  if (text.empty()) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  *out = std::strtoull(text.c_str(), &end, 10);
  return errno == 0 && end == text.c_str() + text.size();
}

BackendChoice parse_backend(const std::string& v) {
  if (v == "auto") return BackendChoice::Auto;
  if (v == "mpi") return BackendChoice::Mpi;
  if (v == "nccl") return BackendChoice::Nccl;
  reject("GJ_COLL_BACKEND", v, "auto, mpi, nccl");
}

// Bytes, optionally with a binary suffix: 1048576, 1024K, 64M, 1G.
std::size_t parse_bytes(const char* name, const std::string& v) {
  static constexpr const char* kAccepted =
      "a non-negative byte count, optionally with K, M or G (binary) suffix, e.g. 67108864 or 64M";
  std::string digits = v;
  unsigned shift = 0;
  switch (v.back()) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    default: break;
  }
  if (shift != 0) digits.pop_back();
  unsigned long long n = 0;
  if (!parse_unsigned(digits, &n) || n > (static_cast<unsigned long long>(SIZE_MAX) >> shift)) {
    reject(name, v, kAccepted);
  }
  return static_cast<std::size_t>(n << shift);
}

long parse_millis(const char* name, const std::string& v) {
  unsigned long long n = 0;
  if (!parse_unsigned(v, &n) || n > static_cast<unsigned long long>(LONG_MAX)) {
    reject(name, v, "a non-negative number of milliseconds (0 = no timeout)");
  }
  return static_cast<long>(n);
}

bool parse_flag(const char* name, const std::string& v) {
  if (const auto b = bool_word(v)) return *b;
  reject(name, v, "1, 0, true, false, yes, no, on, off (any case)");
}

ShmWait parse_shm_wait(const std::string& v) {
  if (v == "auto") return ShmWait::Auto;
  if (v == "spin") return ShmWait::Spin;
  if (v == "sleep") return ShmWait::Sleep;
  reject("GJ_COLL_SHM_WAIT", v, "auto, spin, sleep");
}

ProgressWait parse_progress_wait(const std::string& v) {
  if (v == "auto") return ProgressWait::Auto;
  if (v == "spin") return ProgressWait::Spin;
  if (v == "sleep") return ProgressWait::Sleep;
  reject("GJ_COLL_PROGRESS_WAIT", v, "auto, spin, sleep");
}

LogLevel parse_log_level(const std::string& v) {
  if (v == "error") return LogLevel::Error;
  if (v == "warn") return LogLevel::Warn;
  if (v == "info") return LogLevel::Info;
  if (v == "debug") return LogLevel::Debug;
  reject("GJ_COLL_LOG_LEVEL", v, "error, warn, info, debug");
}

std::string raw(const Env& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

NcclEnv parse_nccl_env(const Env& env) {
  NcclEnv n;
  if (auto it = env.find("GJ_NCCL_LIBRARY"); it != env.end()) {
    n.library_set = true;
    n.library = it->second;
  }
  // NCCL's own rule: exactly "1" enables it.
  n.multi_rank_gpu = raw(env, "NCCL_MULTI_RANK_GPU_ENABLE") == "1";
  n.host_id = raw(env, "NCCL_HOSTID");
  n.cuda_home = raw(env, "CUDA_HOME");
  n.python_path = raw(env, "PYTHONPATH");
  n.virtual_env = raw(env, "VIRTUAL_ENV");
  n.conda_prefix = raw(env, "CONDA_PREFIX");
  n.path = raw(env, "PATH");
  n.home = raw(env, "HOME");
  return n;
}

}  // namespace

Config parse_config(const Env& env) {
  Config c;
  if (auto* v = lookup(env, "GJ_COLL_BACKEND")) c.backend = parse_backend(*v);
  if (auto* v = lookup(env, "GJ_COLL_FUSION_BYTES")) c.fusion_bytes = parse_bytes("GJ_COLL_FUSION_BYTES", *v);
  if (auto* v = lookup(env, "GJ_COLL_TIMEOUT_MS")) c.timeout_ms = parse_millis("GJ_COLL_TIMEOUT_MS", *v);
  if (auto* v = lookup(env, "GJ_COLL_SHM")) c.shm = parse_flag("GJ_COLL_SHM", *v);
  if (auto* v = lookup(env, "GJ_COLL_HIERARCHICAL")) c.hierarchical = parse_flag("GJ_COLL_HIERARCHICAL", *v);
  if (auto* v = lookup(env, "GJ_COLL_SHM_WAIT")) c.shm_wait = parse_shm_wait(*v);
  if (auto* v = lookup(env, "GJ_COLL_PROGRESS_WAIT")) c.progress_wait = parse_progress_wait(*v);
  if (auto* v = lookup(env, "GJ_COLL_LOG_LEVEL")) c.log_level = parse_log_level(*v);
  if (auto* v = lookup(env, "GJ_COLL_CHECK")) c.check = parse_flag("GJ_COLL_CHECK", *v);
  c.nccl = parse_nccl_env(env);
  return c;
}

}  // namespace gj
