// A peer that joins a host collective late, on the plain MPI path (run with GJ_COLL_SHM=0):
// rank 0 enters gjAllReduce (or gjIallReduce + gjWait with "nonblocking") at once, every other
// rank after LATE_MS. ctest runs it with a GJ_COLL_TIMEOUT_MS below LATE_MS (the job must end
// with exit status 124 and the watch's line, stall_abort.h) and above it (the late peer is
// waited for: exit 0, the sum checked).
//   stall_main LATE_MS [nonblocking]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "gj/collectives.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stall_main LATE_MS [nonblocking]\n");
    return 2;
  }
  const long late_ms = std::strtol(argv[1], nullptr, 10);
  const bool nonblocking = argc > 2 && std::string(argv[2]) == "nonblocking";
  gjComm_t c = nullptr;
  if (gjCommInitWorld(&c) != gjSuccess) {
    std::fprintf(stderr, "init: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  int rank = 0, size = 0;
  gjCommRank(c, &rank);
  gjCommSize(c, &size);
  if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(late_ms));
  double x = rank + 1;
  gjResult_t rc = gjSuccess;
  if (nonblocking) {
    gjRequest_t r = nullptr;
    rc = gjIallReduce(&x, &x, 1, gjFloat64, gjSum, 1, 1, c, nullptr, &r);
    if (rc == gjSuccess) rc = gjWait(r);
  } else {
    rc = gjAllReduce(&x, &x, 1, gjFloat64, gjSum, c, nullptr);
  }
  if (rc != gjSuccess) {
    std::fprintf(stderr, "rank %d: allreduce failed: %s\n", rank, gjGetLastError(c));
    return 1;
  }
  const double want = size * (size + 1) / 2.0;
  if (x != want) {
    std::fprintf(stderr, "rank %d: sum %g, want %g\n", rank, x, want);
    return 1;
  }
  if (rank == 0) std::printf("late peer waited for: sum %g\n", x);
  gjCommDestroy(c);
  gjFinalize();
  return 0;
}
