// Barrier, sub-communicators (gjCommSplit: even/odd ranks, a rank left out, key order) and
// the build capability bits.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "expect.h"
#include "harness.h"

namespace gjt {

void run_split_cases(Ctx& ctx) {
  const Failure F = kSplit;
  expect_ok(ctx, F, "barrier", gjBarrier(ctx.comm), ctx.comm);

  // Even and odd ranks, ordered by descending world rank (key = -rank).
  gjComm_t half = nullptr;
  expect_ok(ctx, F, "split even/odd", gjCommSplit(ctx.comm, ctx.rank % 2, -ctx.rank, &half), ctx.comm);
  if (half != nullptr) {
    int r = -1, n = -1;
    gjCommRank(half, &r);
    gjCommSize(half, &n);
    const int want_n = (ctx.size - ctx.rank % 2 + 1) / 2;
    if (n != want_n) ctx.fail(F, "split size " + std::to_string(n) + ", expected " + std::to_string(want_n));
    // Descending key order: the highest world rank of the color is rank 0.
    const int highest = ctx.size - 1 - ((ctx.size - 1 - ctx.rank % 2) % 2);
    if (r != (highest - ctx.rank) / 2) ctx.fail(F, "split rank " + std::to_string(r) + " not in key order");
    std::int64_t v = ctx.rank;
    expect_ok(ctx, F, "allreduce on split", gjAllReduce(&v, &v, 1, gjInt64, gjSum, half, nullptr), half);
    std::int64_t want = 0;
    for (int q = ctx.rank % 2; q < ctx.size; q += 2) want += q;
    if (v != want) ctx.fail(F, "allreduce on split: " + std::to_string(v) + ", expected " + std::to_string(want));
    expect_ok(ctx, F, "barrier on split", gjBarrier(half), half);
    expect_ok(ctx, F, "destroy split", gjCommDestroy(half));
  } else {
    ctx.fail(F, "split returned no communicator for color " + std::to_string(ctx.rank % 2));
  }

  // Color < 0: the rank is in no new communicator; the others still get theirs.
  gjComm_t some = reinterpret_cast<gjComm_t>(&ctx);
  const int color = ctx.rank == 0 && ctx.size > 1 ? -1 : 0;
  expect_ok(ctx, F, "split with a rank left out", gjCommSplit(ctx.comm, color, 0, &some), ctx.comm);
  if (color < 0 && some != nullptr) ctx.fail(F, "color -1 returned a communicator");
  if (color >= 0) {
    int n = 0;
    if (some == nullptr || gjCommSize(some, &n) != gjSuccess || n != (ctx.size > 1 ? ctx.size - 1 : 1)) {
      ctx.fail(F, "split without rank 0 has the wrong size");
    }
    if (some != nullptr) gjCommDestroy(some);
  }

  const int caps = gjBuildCapabilities();
  if ((caps & ~(gjCapCuda | gjCapNccl)) != 0) ctx.fail(F, "unknown capability bits " + std::to_string(caps));
  gjBackend_t device = gjBackendMpi;
  const bool nccl_usable = gjCommBackend(ctx.comm, 1, &device) == gjSuccess && device == gjBackendNccl;
  if (nccl_usable && !(caps & gjCapNccl)) ctx.fail(F, "NCCL in use but gjCapNccl not set");
}

}  // namespace gjt
