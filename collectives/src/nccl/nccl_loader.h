// libnccl.so.2 opened with dlopen on first use (nccl_search.h says where it is looked for), so
// that libgj_collectives.so has no NEEDED libnccl and loads on machines without NCCL; the
// backend keeps calling ncclXxx names, which nccl_shim.cpp defines (hidden) as forwarders
// through the table here.
#pragma once

#include <nccl.h>

#include <string>
#include <vector>

#include "../config.h"
#include "nccl_search.h"

namespace gj::nccl {

// Every NCCL function the backend uses. X(name, required): a library without a required one
// is skipped by the search; an optional one missing returns ncclInvalidUsage when called.
#define GJ_NCCL_FUNCTIONS(X)        \
  X(ncclGetVersion, true)           \
  X(ncclGetErrorString, true)       \
  X(ncclGetLastError, true)         \
  X(ncclGetUniqueId, true)          \
  X(ncclCommInitRankConfig, true)   \
  X(ncclCommInitRank, true)         \
  X(ncclCommFinalize, true)         \
  X(ncclCommDestroy, true)          \
  X(ncclCommAbort, true)            \
  X(ncclCommGetAsyncError, true)    \
  X(ncclCommCount, true)            \
  X(ncclCommUserRank, true)         \
  X(ncclCommCuDevice, true)         \
  X(ncclCommSplit, false)           \
  X(ncclRedOpCreatePreMulSum, true) \
  X(ncclRedOpDestroy, true)         \
  X(ncclAllReduce, true)            \
  X(ncclBroadcast, true)            \
  X(ncclReduce, true)               \
  X(ncclAllGather, true)            \
  X(ncclReduceScatter, true)        \
  X(ncclSend, true)                 \
  X(ncclRecv, true)                 \
  X(ncclGroupStart, true)           \
  X(ncclGroupEnd, true)

struct Api {
#define GJ_NCCL_POINTER(name, required) decltype(&::name) name = nullptr;
  GJ_NCCL_FUNCTIONS(GJ_NCCL_POINTER)
#undef GJ_NCCL_POINTER
};

struct Library {
  bool ok = false;
  Api api;
  std::string path;   // the candidate that loaded (as given to dlopen) and, resolved, its file
  int version = 0;    // ncclGetVersion
  std::string error;  // !ok: describe_failed_search(attempts)
  std::vector<Attempt> attempts;
};

// Tries the candidates in order with dlopen(RTLD_NOW | RTLD_LOCAL); the first that has every
// required symbol and a version >= kMinNcclVersion wins. Libraries that lose stay open (cheap,
// and closing one that a process also loaded elsewhere is not ours to do).
Library open_first(const std::vector<Candidate>& candidates);

// The search inputs of the configuration's snapshot (config.h, NcclEnv): GJ_NCCL_LIBRARY, the
// site folders that exist (globs of site_patterns, canonical, without duplicates), CUDA_HOME
// (default /usr/local/cuda).
SearchInputs search_inputs(const NcclEnv& env);

// The process's NCCL: searched once, with the snapshot of the first communicator that asks
// (thread-safe), then cached for the process.
const Library& library(const NcclEnv& env);
// The library that search found; before any search, one that is not ok and says so.
const Library& library();

}  // namespace gj::nccl
