// The cost of the hang and straggler view on the collective path (docs/agent.md "Hangs",
// "Stragglers"): every collective is counted into its communicator's progress
// (peer/progress.h, enter() at the call, complete() at its result). This prints, in one run,
// the time of that pair against the cheapest real collective of the same run (an 8-byte
// gjAllReduce over this job's ranks) and against a 1 MiB one, and the share it adds.
//
//   mpiexec -n 2 gj_progress_bench [--calls N]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gj/collectives.h"
#include "peer/progress.h"

namespace {

double seconds_per(int n, const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / n;
}

double allreduce_time(gjComm_t comm, std::size_t count, int calls) {
  std::vector<float> buf(count, 1.0f);
  for (int i = 0; i < 5; ++i) gjAllReduce(buf.data(), buf.data(), count, gjFloat32, gjSum, comm, nullptr);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) gjAllReduce(buf.data(), buf.data(), count, gjFloat32, gjSum, comm, nullptr);
  double t = seconds_per(calls, t0);
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 2000;
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--calls") == 0 && i + 1 < argc) calls = std::atoi(argv[++i]);
  gjComm_t comm = nullptr;
  if (gjCommInitWorld(&comm) != gjSuccess) {
    std::fprintf(stderr, "gjCommInitWorld failed: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // The counters alone, as every collective runs them (no reporter: no wrapper here).
  gj::peer::Progress progress({0, 1}, 99);
  const int pairs = 2000000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < pairs; ++i) {
    progress.enter("gjAllReduce", 8);
    progress.complete();
  }
  const double pair = seconds_per(pairs, t0);
  const double small = allreduce_time(comm, 2, calls);
  const double large = allreduce_time(comm, 262144, calls / 10 > 10 ? calls / 10 : 10);
  if (rank == 0) {
    std::printf("| what | time per call | progress counters' share |\n|---|---|---|\n");
    std::printf("| progress enter+complete | %.1f ns | |\n", pair * 1e9);
    std::printf("| gjAllReduce 8 B | %.2f us | %.3f %% |\n", small * 1e6, 100.0 * pair / small);
    std::printf("| gjAllReduce 1 MiB | %.1f us | %.4f %% |\n", large * 1e6, 100.0 * pair / large);
  }
  gjCommDestroy(comm);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  return 0;
}
