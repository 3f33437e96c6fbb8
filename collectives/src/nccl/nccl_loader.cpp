#include "nccl_loader.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>

namespace gj::nccl {
namespace {

std::string resolved(void* handle, void* symbol, const std::string& fallback) {
  Dl_info info{};
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  (void)handle;
  return fallback;
}

}  // namespace

Library open_first(const std::vector<Candidate>& candidates) {
  Library lib;
  for (const Candidate& c : candidates) {
    Attempt attempt{c, ""};
    if (c.file.empty()) {
      attempt.failure = "empty path";
      lib.attempts.push_back(attempt);
      continue;
    }
    void* handle = dlopen(c.file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* e = dlerror();
      attempt.failure = e != nullptr ? e : "dlopen failed";
      lib.attempts.push_back(attempt);
      continue;
    }
    Api api;
    std::string missing;
#define GJ_NCCL_RESOLVE(name, required)                                              \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));             \
  if (api.name == nullptr && (required)) missing += std::string(missing.empty() ? "" : ", ") + #name;
    GJ_NCCL_FUNCTIONS(GJ_NCCL_RESOLVE)
#undef GJ_NCCL_RESOLVE
    if (!missing.empty()) {
      attempt.failure = "loaded but lacks " + missing;
      lib.attempts.push_back(attempt);
      continue;
    }
    int version = 0;
    if (api.ncclGetVersion(&version) != ncclSuccess) {
      attempt.failure = "loaded but ncclGetVersion failed";
      lib.attempts.push_back(attempt);
      continue;
    }
    if (version < kMinNcclVersion) {
      attempt.failure = "version " + version_string(version) + " is older than " + version_string(kMinNcclVersion);
      lib.attempts.push_back(attempt);
      continue;
    }
    lib.attempts.push_back(attempt);
    lib.ok = true;
    lib.api = api;
    lib.version = version;
    const std::string file = resolved(handle, reinterpret_cast<void*>(api.ncclGetVersion), c.file);
    lib.path = file == c.file ? c.file : c.file + " (" + file + ")";
    return lib;
  }
  lib.error = describe_failed_search(lib.attempts);
  return lib;
}

SearchInputs search_inputs(const NcclEnv& env) {
  SearchInputs in;
  if (env.library_set) {
    in.explicit_set = true;
    in.explicit_path = env.library;
    return in;
  }
  if (!env.cuda_home.empty()) in.cuda_home = env.cuda_home;
  std::set<std::string> seen;
  for (const std::string& pattern :
       site_patterns(env.python_path, env.virtual_env, env.conda_prefix, env.path, env.home)) {
    glob_t g{};
    if (glob(pattern.c_str(), GLOB_NOSORT | GLOB_ONLYDIR, nullptr, &g) == 0) {
      // Newest Python first: python3.12 before python3.9 (longer names, then reverse order).
      std::vector<std::string> found(g.gl_pathv, g.gl_pathv + g.gl_pathc);
      std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() > b.size() : a > b;
      });
      for (const std::string& dir : found) {
        char real[PATH_MAX];
        if (realpath(dir.c_str(), real) == nullptr) continue;
        if (seen.insert(real).second) in.site_dirs.emplace_back(real);
      }
    }
    globfree(&g);
  }
  return in;
}

namespace {
std::atomic<const Library*> g_opened{nullptr};
}  // namespace

const Library& library(const NcclEnv& env) {
  static const Library lib = open_first(plan_search(search_inputs(env)));
  g_opened.store(&lib);
  return lib;
}

const Library& library() {
  static const Library none = [] {
    Library l;
    l.error = "NCCL was not searched for yet (no communicator used a device buffer)";
    return l;
  }();
  const Library* opened = g_opened.load();
  return opened != nullptr ? *opened : none;
}

}  // namespace gj::nccl
