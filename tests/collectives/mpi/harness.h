// The multi-process test program's shared state: the communicator, rank/size, and failures
// recorded by class. Each class has its own exit code; all ranks exit with the largest.
#pragma once

#include <cstdio>
#include <string>

#include "gj/collectives.h"

namespace gjt {

enum Failure : int {
  kOk = 0,
  kSetup = 10,         // communicator creation or attributes
  kAllreduce = 11,     // a wrong allreduce result
  kBroadcast = 12,     // a wrong broadcast result
  kGrouped = 13,       // grouped != per-tensor, or a grouped result wrong
  kInvalidArgs = 14,   // an invalid call not rejected with the right code / message
  kLifecycle = 15,     // destroy / abort / finalize / registry behaviour
  kCppWrapper = 16,    // collectives.hpp behaviour
  kAllgather = 17,     // a wrong allgather result
  kReduceScatter = 18, // a wrong reduce-scatter result
  kScaled = 19,        // a wrong pre/post-scaled result
  kSplit = 20,         // barrier / sub-communicator behaviour
  kMismatch = 21,      // a mismatched call not failing on every rank
  kNonblocking = 22,   // a request's result differs from the blocking call, or misuse accepted
  kAlltoall = 30,      // a wrong alltoall result, or a mismatched / invalid alltoall accepted
  kAdasum = 31,        // a wrong Adasum result, or a refused / invalid Adasum call accepted
};

struct Ctx {
  gjComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  int worst = kOk;
  int failures = 0;
  unsigned failed_classes = 0;  // bit (f - kSetup) for every class that failed on this rank
  const char* group = "setup";  // the case group running (main.cpp), named in every failure

  // Prints the first few failures of this rank (enough to debug, not a flood), each naming its
  // case group, so a failing run's first line says which case failed (nothing else is printed
  // before the summary).
  void fail(Failure f, const std::string& what) {
    if (failures++ < 20) std::fprintf(stderr, "[rank %d] FAIL %s (exit %d): %s\n", rank, group, f, what.c_str());
    if (f > worst) worst = f;
    failed_classes |= 1u << (f - kSetup);
  }
};

// The case group behind each failure class, for the summary line.
inline const char* class_name(int f) {
  static const char* names[] = {"setup",    "allreduce", "broadcast",      "grouped", "invalid",  "lifecycle",  "c++",
                                "allgather", "reduce-scatter", "scaled", "split", "mismatch", "nonblocking"};
  return f >= kSetup && f <= kNonblocking ? names[f - kSetup] : "?";
}

void run_allreduce_cases(Ctx& ctx);
void run_broadcast_cases(Ctx& ctx);
void run_grouped_cases(Ctx& ctx);
void run_invalid_cases(Ctx& ctx);
void run_lifecycle_cases(Ctx& ctx);
void run_cpp_cases(Ctx& ctx);
void run_allgather_cases(Ctx& ctx);
void run_reduce_scatter_cases(Ctx& ctx);
void run_scaled_cases(Ctx& ctx);
void run_split_cases(Ctx& ctx);
void run_mismatch_cases(Ctx& ctx);
void run_nonblocking_cases(Ctx& ctx);
void run_control_cases(Ctx& ctx);
void run_alltoall_cases(Ctx& ctx);
void run_adasum_cases(Ctx& ctx);

}  // namespace gjt
