// Multi-process test of gj collectives, run by ctest through mpiexec at 1..4 ranks.
// Exit code: 0, or the largest failure class of any rank (harness.h), the same on every rank.
#include <mpi.h>

#include <chrono>
#include <cstdio>

#include "harness.h"

namespace {

template <class F>
void timed(gjt::Ctx& ctx, const char* name, F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f(ctx);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ctx.rank == 0) std::printf("%-10s %6.2f s\n", name, s);
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
  timed(ctx, "reduce-scat", gjt::run_reduce_scatter_cases);
  timed(ctx, "scaled", gjt::run_scaled_cases);
  timed(ctx, "split", gjt::run_split_cases);
  timed(ctx, "mismatch", gjt::run_mismatch_cases);
  timed(ctx, "nonblocking", gjt::run_nonblocking_cases);
  timed(ctx, "alltoall", gjt::run_alltoall_cases);
  timed(ctx, "adasum", gjt::run_adasum_cases);

  int worst = ctx.worst;
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (gjCommDestroy(ctx.comm) != gjSuccess) worst = worst ? worst : gjt::kLifecycle;
  if (gjFinalize() != gjSuccess) worst = worst ? worst : gjt::kLifecycle;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && worst == 0) worst = gjt::kLifecycle;
  if (ctx.rank == 0) std::printf("%s (ranks=%d, exit %d)\n", worst ? "FAILED" : "PASSED", ctx.size, worst);
  return worst;
}
