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
};

struct Ctx {
  gjComm_t comm = nullptr;
  int rank = 0;
  int size = 1;
  int worst = kOk;
  int failures = 0;

  // Prints the first few failures of this rank (enough to debug, not a flood).
  void fail(Failure f, const std::string& what) {
    if (failures++ < 20) std::fprintf(stderr, "[rank %d] FAIL(%d) %s\n", rank, f, what.c_str());
    if (f > worst) worst = f;
  }
};

void run_allreduce_cases(Ctx& ctx);
void run_broadcast_cases(Ctx& ctx);
void run_grouped_cases(Ctx& ctx);
void run_invalid_cases(Ctx& ctx);
void run_lifecycle_cases(Ctx& ctx);
void run_cpp_cases(Ctx& ctx);

}  // namespace gjt
