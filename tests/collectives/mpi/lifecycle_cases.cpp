// Communicators from MPI communicators, attributes, destroy/abort, calls on dead handles.
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "expect.h"
#include "harness.h"

namespace gjt {
namespace {

void sub_communicator(Ctx& ctx) {
  const Failure F = kLifecycle;
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, ctx.rank % 2, ctx.rank, &half);
  gjComm_t c = nullptr;
  expect_ok(ctx, F, "gjCommInitMpi(split)", gjCommInitMpi(&c, &half));
  int rank = -1, size = -1, local_rank = -1, local_size = -1;
  expect_ok(ctx, F, "rank", gjCommRank(c, &rank), c);
  expect_ok(ctx, F, "size", gjCommSize(c, &size), c);
  expect_ok(ctx, F, "local rank", gjCommLocalRank(c, &local_rank), c);
  expect_ok(ctx, F, "local size", gjCommLocalSize(c, &local_size), c);
  const int want_size = (ctx.size + 1 - ctx.rank % 2) / 2;
  if (rank != ctx.rank / 2 || size != want_size) {
    ctx.fail(F, "split comm rank/size " + std::to_string(rank) + "/" + std::to_string(size));
  }
  // All ranks of these tests run on one node.
  if (local_rank != rank || local_size != size) {
    ctx.fail(F, "local rank/size " + std::to_string(local_rank) + "/" + std::to_string(local_size));
  }
  int v = ctx.rank + 1;
  expect_ok(ctx, F, "allreduce on split comm", gjAllReduce(&v, &v, 1, gjInt32, gjSum, c, nullptr), c);
  int want = 0;
  for (int r = ctx.rank % 2; r < ctx.size; r += 2) want += r + 1;
  if (v != want) ctx.fail(F, "split comm sum " + std::to_string(v) + " != " + std::to_string(want));
  expect_ok(ctx, F, "destroy split comm", gjCommDestroy(c));
  MPI_Comm_free(&half);
}

void dead_handles(Ctx& ctx) {
  const Failure F = kLifecycle;
  const MPI_Comm world = MPI_COMM_WORLD;
  float x = 1;
  gjComm_t c = nullptr;
  expect_ok(ctx, F, "init second comm", gjCommInitMpi(&c, &world));
  expect_ok(ctx, F, "destroy second comm", gjCommDestroy(c));
  expect_error(ctx, F, "allreduce after destroy", gjAllReduce(&x, &x, 1, gjFloat32, gjSum, c, nullptr), gjInvalidUsage,
               "is not a live communicator", c);
  int rank = 0;
  expect_error(ctx, F, "rank after destroy", gjCommRank(c, &rank), gjInvalidUsage, "gjCommRank: comm=", c);
  expect_error(ctx, F, "destroy twice", gjCommDestroy(c), gjInvalidUsage, "gjCommDestroy: comm=", c);

  gjComm_t a = nullptr;
  expect_ok(ctx, F, "init comm to abort", gjCommInitMpi(&a, &world));
  expect_ok(ctx, F, "abort", gjCommAbort(a));
  expect_error(ctx, F, "broadcast after abort", gjBroadcast(&x, 1, gjFloat32, 0, a, nullptr), gjInvalidUsage,
               "gjBroadcast: comm=", a);
  expect_error(ctx, F, "abort twice", gjCommAbort(a), gjInvalidUsage, "not a live communicator", a);

  expect_error(ctx, F, "gjCommInitWorld(NULL)", gjCommInitWorld(nullptr), gjInvalidArgument, "gjCommInitWorld: comm=NULL");
  expect_error(ctx, F, "gjCommInitMpi(mpi_comm=NULL)", gjCommInitMpi(&c, nullptr), gjInvalidArgument, "mpi_comm=NULL");
  const MPI_Comm null_comm = MPI_COMM_NULL;
  expect_error(ctx, F, "gjCommInitMpi(MPI_COMM_NULL)", gjCommInitMpi(&c, &null_comm), gjInvalidArgument, "MPI_COMM_NULL");
  expect_error(ctx, F, "gjFinalize with a live comm", gjFinalize(), gjInvalidUsage, "1 communicator(s) still alive");
}

// The environment is read when a communicator is created; the API overrides it per communicator.
void fusion_threshold(Ctx& ctx) {
  const Failure F = kLifecycle;
  const MPI_Comm world = MPI_COMM_WORLD;
  std::size_t bytes = 0;
  expect_ok(ctx, F, "default threshold", gjCommGetFusionThreshold(ctx.comm, &bytes), ctx.comm);
  if (getenv("GJ_COLL_FUSION_BYTES") == nullptr && bytes != (std::size_t{64} << 20)) {
    ctx.fail(F, "default fusion threshold " + std::to_string(bytes) + " != 64 MiB");
  }
  setenv("GJ_COLL_FUSION_BYTES", "4K", 1);
  gjComm_t c = nullptr;
  expect_ok(ctx, F, "init with GJ_COLL_FUSION_BYTES=4K", gjCommInitMpi(&c, &world));
  unsetenv("GJ_COLL_FUSION_BYTES");
  expect_ok(ctx, F, "get threshold", gjCommGetFusionThreshold(c, &bytes), c);
  if (bytes != 4096) ctx.fail(F, "GJ_COLL_FUSION_BYTES=4K gave " + std::to_string(bytes));
  expect_ok(ctx, F, "set threshold 0", gjCommSetFusionThreshold(c, 0), c);
  expect_ok(ctx, F, "get threshold", gjCommGetFusionThreshold(c, &bytes), c);
  if (bytes != 0) ctx.fail(F, "threshold after set 0: " + std::to_string(bytes));
  expect_ok(ctx, F, "destroy", gjCommDestroy(c));
}

}  // namespace

void run_lifecycle_cases(Ctx& ctx) {
  fusion_threshold(ctx);
  sub_communicator(ctx);
  dead_handles(ctx);
}

}  // namespace gjt
