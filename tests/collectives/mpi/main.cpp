// Multi-process test of gj collectives, run by ctest through mpiexec at 1..4 ranks.
// Exit code: 0, or the largest failure class of any rank (harness.h), the same on every rank.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "harness.h"

namespace {

// Each group's time, printed after the summary line (a failing run's first line is a failure).
std::string g_timings;

template <class F>
void timed(gjt::Ctx& ctx, const char* name, F&& f) {
  ctx.group = name;
  const auto start = std::chrono::steady_clock::now();
  f(ctx);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char line[64];
  std::snprintf(line, sizeof line, "%-12s %6.2f s\n", name, s);
  g_timings += line;
}

}  // namespace

int main() {
  gjt::Ctx ctx;
  // MPI is not initialized yet: gjCommInitWorld must do it.
  if (gjCommInitWorld(&ctx.comm) != gjSuccess) {
    std::fprintf(stderr, "gjCommInitWorld: %s\n", gjGetLastError(nullptr));
    return gjt::kSetup;
  }
  if (gjCommRank(ctx.comm, &ctx.rank) != gjSuccess || gjCommSize(ctx.comm, &ctx.size) != gjSuccess) {
    std::fprintf(stderr, "rank/size: %s\n", gjGetLastError(ctx.comm));
    return gjt::kSetup;
  }
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided != MPI_THREAD_MULTIPLE) ctx.fail(gjt::kSetup, "gjCommInitWorld did not ask for MPI_THREAD_MULTIPLE");

  timed(ctx, "allreduce", gjt::run_allreduce_cases);
  timed(ctx, "broadcast", gjt::run_broadcast_cases);
  timed(ctx, "grouped", gjt::run_grouped_cases);
  timed(ctx, "invalid", gjt::run_invalid_cases);
  timed(ctx, "lifecycle", gjt::run_lifecycle_cases);
  timed(ctx, "c++", gjt::run_cpp_cases);
  timed(ctx, "allgather", gjt::run_allgather_cases);
  timed(ctx, "reduce-scatter", gjt::run_reduce_scatter_cases);
  timed(ctx, "scaled", gjt::run_scaled_cases);
  timed(ctx, "split", gjt::run_split_cases);
  timed(ctx, "mismatch", gjt::run_mismatch_cases);
  timed(ctx, "nonblocking", gjt::run_nonblocking_cases);
  timed(ctx, "control", gjt::run_control_cases);
  timed(ctx, "alltoall", gjt::run_alltoall_cases);
  timed(ctx, "adasum", gjt::run_adasum_cases);

  ctx.group = "teardown";
  int worst = ctx.worst;
  unsigned classes = ctx.failed_classes;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &classes, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD);
  if (gjCommDestroy(ctx.comm) != gjSuccess) ctx.fail(gjt::kLifecycle, "gjCommDestroy failed");
  if (gjFinalize() != gjSuccess) ctx.fail(gjt::kLifecycle, "gjFinalize failed");
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) ctx.fail(gjt::kLifecycle, "MPI not finalized by gjFinalize");
  worst = worst ? worst : ctx.worst;  // teardown failures are this rank's alone
  classes |= ctx.failed_classes;
  if (ctx.rank == 0) {
    std::string groups;
    for (int f = gjt::kSetup; f <= gjt::kNonblocking; ++f) {
      if (classes & (1u << (f - gjt::kSetup))) groups += std::string(groups.empty() ? "" : ", ") + gjt::class_name(f);
    }
    if (worst) std::printf("FAILED %s (ranks=%d, exit %d)\n", groups.c_str(), ctx.size, worst);
    else std::printf("PASSED (ranks=%d, exit 0)\n", ctx.size);
    std::printf("%s", g_timings.c_str());
  }
  return worst;
}
