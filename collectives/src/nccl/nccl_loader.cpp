#include "nccl_loader.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <set>

namespace gj::nccl {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

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

SearchInputs search_inputs_from_environment() {
  SearchInputs in;
  if (const char* v = std::getenv("GJ_NCCL_LIBRARY"); v != nullptr) {
    in.explicit_set = true;
    in.explicit_path = v;
    return in;
  }
  const std::string cuda_home = env("CUDA_HOME");
  if (!cuda_home.empty()) in.cuda_home = cuda_home;
  std::set<std::string> seen;
  for (const std::string& pattern :
       site_patterns(env("PYTHONPATH"), env("VIRTUAL_ENV"), env("CONDA_PREFIX"), env("PATH"), env("HOME"))) {
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

const Library& library() {
  static const Library lib = open_first(plan_search(search_inputs_from_environment()));
  return lib;
}

}  // namespace gj::nccl
