// Where the NCCL backend looks for libnccl.so.2 at run time, and how it reports a failed search.
// Pure: the inputs (environment values, the site-packages folders found) come in as values, so
// the order and the messages are unit-tested without touching the file system.
//
// Order (docs/gpu.md, "Finding NCCL"):
//   1. GJ_NCCL_LIBRARY: a path to libnccl.so.2. When set it is the only place tried: an explicit
//      choice that fails is an error, not a reason to pick another NCCL silently.
//   2. "libnccl.so.2" through the dynamic loader's own search (an NCCL already loaded into the
//      process, e.g. by torch, then LD_LIBRARY_PATH, the ldconfig cache, /lib, /usr/lib).
//   3. <site>/nvidia/nccl/lib/libnccl.so.2 in each Python site folder found (the pip wheel
//      nvidia-nccl-cu1x that PyTorch depends on), in the order of site_dirs.
//   4. <cuda_home>/lib64/libnccl.so.2, <cuda_home>/lib/libnccl.so.2 (a CUDA toolkit with NCCL).
// A library that loads but lacks a required symbol or is older than kMinNcclVersion is skipped
// (and named in the message) and the search goes on.
#pragma once

#include <string>
#include <vector>

namespace gj::nccl {

// NCCL's version code (ncclGetVersion, NCCL >= 2.9): major * 10000 + minor * 100 + patch.
// 2.14 is the oldest with what the backend calls: ncclCommInitRankConfig (non-blocking
// communicators), ncclCommFinalize, ncclGetLastError.
inline constexpr int kMinNcclVersion = 21400;

struct SearchInputs {
  bool explicit_set = false;         // GJ_NCCL_LIBRARY is set (even to "")
  std::string explicit_path;         // its value
  std::vector<std::string> site_dirs;  // existing Python site folders, most specific first
  std::string cuda_home = "/usr/local/cuda";
};

struct Candidate {
  std::string where;  // for messages: "GJ_NCCL_LIBRARY", "the loader's search", "site-packages", ...
  std::string file;   // what dlopen gets: a path, or the bare soname for the loader's search
};

std::vector<Candidate> plan_search(const SearchInputs& in);

// One tried candidate: what happened ("" = success).
struct Attempt {
  Candidate candidate;
  std::string failure;
};

// "2.28.9" from 22809 (and 2.3.7 from the pre-2.9 code 2307).
std::string version_string(int code);

// The one-line gjUnsupported message: every place tried with its failure, then the fix.
std::string describe_failed_search(const std::vector<Attempt>& attempts);

// Site folders from the environment values (pure part of finding them): PYTHONPATH entries,
// then $VIRTUAL_ENV and $CONDA_PREFIX's lib/python3.*/site-packages (the glob is expanded by the
// caller: pattern_dirs are the patterns, listed here in order).
std::vector<std::string> site_patterns(const std::string& pythonpath, const std::string& virtual_env,
                                       const std::string& conda_prefix, const std::string& path,
                                       const std::string& home);

}  // namespace gj::nccl
