// Each invalid argument returns the right code and a message naming it; nothing hangs.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "../raw_calls.h"
#include "expect.h"
#include "harness.h"

namespace gjt {
namespace {

constexpr int kBadDtype = 17;
constexpr int kBadOp = 9;

void local_argument_checks(Ctx& ctx) {
  const Failure F = kInvalidArgs;
  gjComm_t c = ctx.comm;
  float buf[8] = {};
  const std::size_t huge = SIZE_MAX;

  expect_error(ctx, F, "null sendbuff", gjAllReduce(nullptr, buf, 5, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "gjAllReduce: sendbuff=NULL with count=5", c);
  expect_error(ctx, F, "null recvbuff", gjAllReduce(buf, nullptr, 5, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "gjAllReduce: recvbuff=NULL with count=5", c);
  expect_error(ctx, F, "count SIZE_MAX", gjAllReduce(buf, buf, huge, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "count=18446744073709551615 elements of f32", c);
  expect_error(ctx, F, "u8 count (size_t)-1", gjAllReduce(buf, buf, static_cast<std::size_t>(-1), gjUint8, gjSum, c, nullptr),
               gjInvalidArgument, "count=18446744073709551615 elements of u8", c);
  expect_error(ctx, F, "bad dtype", raw_allreduce(buf, buf, 1, kBadDtype, gjSum, c), gjInvalidArgument,
               "gjAllReduce: dtype=17 is not a gjDataType_t (0..10)", c);
  expect_error(ctx, F, "negative dtype", raw_allreduce(buf, buf, 1, -1, gjSum, c),
               gjInvalidArgument, "dtype=-1", c);
  expect_error(ctx, F, "bad op", raw_allreduce(buf, buf, 1, gjFloat32, kBadOp, c), gjInvalidArgument,
               "gjAllReduce: op=9 is not a gjRedOp_t (0..4)", c);

  expect_error(ctx, F, "broadcast root -1", gjBroadcast(buf, 1, gjFloat32, -1, c, nullptr), gjInvalidArgument,
               "gjBroadcast: root=-1 is not a rank of this communicator", c);
  expect_error(ctx, F, "broadcast root=size", gjBroadcast(buf, 1, gjFloat32, ctx.size, c, nullptr), gjInvalidArgument,
               "root=" + std::to_string(ctx.size), c);
  expect_error(ctx, F, "broadcast null buff", gjBroadcast(nullptr, 3, gjInt64, 0, c, nullptr), gjInvalidArgument,
               "gjBroadcast: buff=NULL with count=3", c);
  expect_error(ctx, F, "broadcast bad dtype", raw_broadcast(buf, 1, kBadDtype, 0, c), gjInvalidArgument,
               "gjBroadcast: dtype=17", c);

  const void* sends[2] = {buf, buf};
  void* recvs[2] = {buf, buf};
  const std::size_t counts[2] = {2, 3};
  expect_error(ctx, F, "ntensors -1", gjGroupedAllReduce(sends, recvs, counts, -1, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "gjGroupedAllReduce: ntensors=-1 is negative", c);
  expect_error(ctx, F, "counts NULL", gjGroupedAllReduce(sends, recvs, nullptr, 2, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "counts=NULL with ntensors=2", c);
  expect_error(ctx, F, "sendbuffs NULL", gjGroupedAllReduce(nullptr, recvs, counts, 2, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "sendbuffs=NULL", c);
  const void* sends_hole[2] = {buf, nullptr};
  expect_error(ctx, F, "sendbuffs[1] NULL", gjGroupedAllReduce(sends_hole, recvs, counts, 2, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "sendbuffs[1]=NULL with counts[1]=3", c);
  const std::size_t huge_counts[2] = {1, huge};
  expect_error(ctx, F, "counts[1] SIZE_MAX", gjGroupedAllReduce(sends, recvs, huge_counts, 2, gjFloat32, gjSum, c, nullptr),
               gjInvalidArgument, "counts[1]=18446744073709551615", c);
  expect_error(ctx, F, "grouped bad op", raw_grouped(sends, recvs, counts, 2, gjFloat32, kBadOp, c),
               gjInvalidArgument, "gjGroupedAllReduce: op=9", c);

  expect_error(ctx, F, "NULL comm", gjAllReduce(buf, buf, 1, gjFloat32, gjSum, nullptr, nullptr), gjInvalidUsage,
               "gjAllReduce: comm=NULL");
  expect_error(ctx, F, "rank NULL out", gjCommRank(c, nullptr), gjInvalidArgument, "gjCommRank: the result pointer=NULL", c);
  expect_error(ctx, F, "fusion threshold SIZE_MAX", gjCommSetFusionThreshold(c, huge), gjInvalidArgument,
               "gjCommSetFusionThreshold: bytes=18446744073709551615", c);

  gjBackend_t backend = gjBackendNccl;
  expect_ok(ctx, F, "host backend", gjCommBackend(c, 0, &backend), c);
  if (backend != gjBackendMpi) ctx.fail(F, "host buffers do not use the MPI backend");
  const gjResult_t device = gjCommBackend(c, 1, &backend);
  if (device != gjSuccess) {  // a CPU-only job: device buffers are unsupported, and say why
    expect_error(ctx, F, "device backend without NCCL", device, gjUnsupported, "gjCommBackend: device buffer but", c);
  }

  // Per-communicator and per-thread last errors.
  raw_allreduce(buf, buf, 1, kBadDtype, gjSum, c);
  gjAllReduce(buf, buf, 1, gjFloat32, gjSum, nullptr, nullptr);
  if (std::string(gjGetLastError(c)).find("dtype=17") == std::string::npos) {
    ctx.fail(F, std::string("per-comm last error was replaced by a call on another comm: ") + gjGetLastError(c));
  }
  if (std::string(gjGetLastError(nullptr)).find("comm=NULL") == std::string::npos) {
    ctx.fail(F, std::string("thread last error is not the latest failure: ") + gjGetLastError(nullptr));
  }

  for (int code = 0; code < gjNumResults; ++code) {
    const std::string s = gjGetErrorString(static_cast<gjResult_t>(code));
    if (s.empty() || s == gjGetErrorString(gjNumResults)) ctx.fail(F, "no error string for code " + std::to_string(code));
  }
  const std::size_t sizes[] = {4, 8, 2, 2, 4, 8, 1, 1, 2, 1, 1};
  static_assert(sizeof sizes / sizeof sizes[0] == gjNumDataTypes, "one size per dtype");
  for (int d = 0; d < gjNumDataTypes; ++d) {
    if (gjDataTypeSize(static_cast<gjDataType_t>(d)) != sizes[d]) ctx.fail(F, "gjDataTypeSize(" + std::to_string(d) + ")");
  }
  if (raw_dtype_size(kBadDtype) != 0) ctx.fail(F, "gjDataTypeSize(17) != 0");
}

// Rank-dependent arguments: every rank must see gjInvalidUsage, none may hang.
void cross_rank_checks(Ctx& ctx) {
  const Failure F = kInvalidArgs;
  float a[4] = {1, 2, 3, 4};
  float b[4] = {1, 2, 3, 4};
  const void* sends[2] = {a, b};
  void* recvs[2] = {a, b};
  const std::size_t counts[2] = {2, ctx.rank == 0 ? std::size_t{3} : std::size_t{4}};
  expect_error(ctx, F, "grouped counts differ across ranks",
               gjGroupedAllReduce(sends, recvs, counts, 2, gjFloat32, gjSum, ctx.comm, nullptr), gjInvalidUsage,
               "gjGroupedAllReduce: ranks passed different count (smallest 5, largest 6)", ctx.comm);
  const std::size_t same[2] = {2, 2};
  expect_error(ctx, F, "grouped dtype differs across ranks",
               gjGroupedAllReduce(sends, recvs, same, 2, ctx.rank == 0 ? gjInt32 : gjFloat32, gjSum, ctx.comm, nullptr),
               gjInvalidUsage, "ranks passed different dtype", ctx.comm);

  // GJ_COLL_CHECK=1: plain allreduce and broadcast check their arguments too.
  setenv("GJ_COLL_CHECK", "1", 1);
  gjComm_t checked = nullptr;
  const MPI_Comm world = MPI_COMM_WORLD;
  expect_ok(ctx, F, "init with GJ_COLL_CHECK=1", gjCommInitMpi(&checked, &world));
  unsetenv("GJ_COLL_CHECK");
  expect_error(ctx, F, "GJ_COLL_CHECK count mismatch",
               gjAllReduce(a, a, ctx.rank == 0 ? 3 : 4, gjFloat32, gjSum, checked, nullptr), gjInvalidUsage,
               "gjAllReduce: ranks passed different count (smallest 3, largest 4)", checked);
  expect_error(ctx, F, "GJ_COLL_CHECK root mismatch",
               gjBroadcast(a, 4, gjFloat32, ctx.rank == 0 ? 0 : 1, checked, nullptr), gjInvalidUsage,
               "gjBroadcast: ranks passed different root", checked);
  expect_ok(ctx, F, "GJ_COLL_CHECK matching call", gjAllReduce(a, a, 4, gjFloat32, gjSum, checked, nullptr), checked);
  expect_ok(ctx, F, "destroy checked comm", gjCommDestroy(checked));
}

// `name`=`value` on rank 0 only: rank 0's gjCommInitMpi fails with `code` saying `says`; every
// other rank's fails too (gjInvalidUsage saying `elsewhere`) instead of hanging in the init.
void bad_on_rank_zero(Ctx& ctx, const char* name, const char* value, gjResult_t code, const char* says,
                      const char* elsewhere) {
  const MPI_Comm world = MPI_COMM_WORLD;
  gjComm_t c = nullptr;
  const std::string what = std::string(name) + "=" + value + " on rank 0";
  if (ctx.rank == 0) setenv(name, value, 1);
  const gjResult_t rc = gjCommInitMpi(&c, &world);
  unsetenv(name);
  if (ctx.rank == 0) {
    expect_error(ctx, kInvalidArgs, what, rc, code, says);
  } else {
    expect_error(ctx, kInvalidArgs, what + ", seen elsewhere", rc, gjInvalidUsage, elsewhere);
  }
}

void bad_environment(Ctx& ctx) {
  const Failure F = kInvalidArgs;
  const MPI_Comm world = MPI_COMM_WORLD;
  gjComm_t c = nullptr;
  setenv("GJ_COLL_FUSION_BYTES", "abc", 1);
  expect_error(ctx, F, "GJ_COLL_FUSION_BYTES=abc", gjCommInitMpi(&c, &world), gjInvalidArgument,
               "GJ_COLL_FUSION_BYTES=\"abc\" is not valid");
  unsetenv("GJ_COLL_FUSION_BYTES");
  if (c != nullptr) ctx.fail(F, "failed init left a handle");
  if (ctx.size == 1) return;
  bad_on_rank_zero(ctx, "GJ_COLL_BACKEND", "gpu", gjInvalidArgument, "GJ_COLL_BACKEND=\"gpu\"",
                   "GJ_COLL_* settings failed on another rank");
  gjBackend_t backend = gjBackendMpi;
  if (gjCommBackend(ctx.comm, 1, &backend) == gjUnsupported) {  // NCCL cannot be used here
    bad_on_rank_zero(ctx, "GJ_COLL_BACKEND", "nccl", gjUnsupported, "GJ_COLL_BACKEND=nccl but",
                     "backend choice failed on another rank");
  }
}

}  // namespace

void run_invalid_cases(Ctx& ctx) {
  local_argument_checks(ctx);
  if (ctx.size > 1) cross_rank_checks(ctx);
  bad_environment(ctx);
}

}  // namespace gjt
