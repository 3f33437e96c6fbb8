// With the agreement check on, mismatched calls fail with gjInvalidUsage on every rank (no
// hang, no wrong data): different collectives, counts, per-rank counts, dtypes, ops, roots,
// scaling factors, blocking and nonblocking; a failed request fails the later ones and the
// communicator then refuses new work. The check can be switched on and off.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "expect.h"
#include "harness.h"

namespace gjt {
namespace {

const Failure F = kMismatch;

gjComm_t checked_comm(Ctx& ctx) {
  gjComm_t c = nullptr;
  const MPI_Comm world = MPI_COMM_WORLD;
  expect_ok(ctx, F, "gjCommInitMpi", gjCommInitMpi(&c, &world));
  expect_ok(ctx, F, "gjCommSetCheck(1)", gjCommSetCheck(c, 1), c);
  return c;
}

void blocking_mismatches(Ctx& ctx, gjComm_t c) {
  const bool r0 = ctx.rank == 0;
  float a[64] = {};
  std::vector<std::size_t> counts(static_cast<std::size_t>(ctx.size), 2);
  // Different collectives at the same point of the call sequence.
  const gjResult_t kinds = r0 ? gjAllReduce(a, a, 4, gjFloat32, gjSum, c, nullptr)
                              : gjBroadcast(a, 4, gjFloat32, 0, c, nullptr);
  expect_error(ctx, F, "allreduce vs broadcast", kinds, gjInvalidUsage,
               "ranks passed different collective (smallest allreduce, largest broadcast)", c);
  const gjResult_t kinds2 = r0 ? gjReduceScatter(a, a, counts.data(), gjFloat32, gjSum, 1, 1, c, nullptr)
                               : gjAllGather(a, a + 32, 2, gjFloat32, c, nullptr);
  expect_error(ctx, F, "reduce-scatter vs allgather", kinds2, gjInvalidUsage, "ranks passed different collective",
               c);
  const gjResult_t kinds3 = r0 ? gjBarrier(c) : gjAllReduce(a, a, 1, gjFloat32, gjSum, c, nullptr);
  expect_error(ctx, F, "barrier vs allreduce", kinds3, gjInvalidUsage, "ranks passed different collective", c);

  std::vector<std::size_t> odd = counts;
  if (r0) odd[1] = 3;
  expect_error(ctx, F, "allgatherv counts differ",
               gjAllGatherV(a, a + 16, odd.data(), gjFloat32, c, nullptr), gjInvalidUsage,
               "gjAllGatherV: ranks passed different count", c);
  odd = counts;
  if (r0) {  // same total, different split
    odd[0] = 3;
    odd[1] = 1;
  }
  expect_error(ctx, F, "reduce-scatter split differs",
               gjReduceScatter(a, a + 32, odd.data(), gjFloat32, gjSum, 1, 1, c, nullptr), gjInvalidUsage,
               "gjReduceScatter: ranks passed different", c);
  expect_error(ctx, F, "reduce-scatter op differs",
               gjReduceScatter(a, a + 32, counts.data(), gjFloat32, r0 ? gjSum : gjMax, 1, 1, c, nullptr),
               gjInvalidUsage, "ranks passed different op (smallest 0, largest 3)", c);
  expect_error(ctx, F, "allgather dtype differs",
               gjAllGather(a, a + 16, 2, r0 ? gjInt32 : gjFloat32, c, nullptr), gjInvalidUsage,
               "gjAllGather: ranks passed different", c);
  expect_error(ctx, F, "allreduce prescale differs",
               gjAllReduceScaled(a, a, 4, gjFloat32, gjSum, r0 ? 0.5 : 1.0, 1.0, c, nullptr), gjInvalidUsage,
               "ranks passed different prescale/postscale", c);
  expect_error(ctx, F, "broadcast root differs", gjBroadcast(a, 4, gjFloat32, r0 ? 0 : 1, c, nullptr),
               gjInvalidUsage, "ranks passed different root (smallest 0, largest 1)", c);
  // A blocking call and a nonblocking one with the same arguments are the same call.
  gjRequest_t req = nullptr;
  const gjResult_t rc = r0 ? gjAllReduce(a, a, 4, gjFloat32, gjSum, c, nullptr)
                           : gjIallReduce(a, a, 4, gjFloat32, gjSum, 1, 1, c, nullptr, &req);
  expect_ok(ctx, F, "blocking allreduce meets nonblocking", rc, c);
  if (req != nullptr) expect_ok(ctx, F, "wait", gjWait(req));
  expect_ok(ctx, F, "matching call after mismatches", gjAllReduce(a, a, 4, gjFloat32, gjSum, c, nullptr), c);

  // Check off: matching calls still work, and on again catches the next mismatch.
  expect_ok(ctx, F, "gjCommSetCheck(0)", gjCommSetCheck(c, 0), c);
  expect_ok(ctx, F, "unchecked allreduce", gjAllReduce(a, a, 4, gjFloat32, gjSum, c, nullptr), c);
  expect_ok(ctx, F, "gjCommSetCheck(1) again", gjCommSetCheck(c, 1), c);
  expect_error(ctx, F, "count differs after re-enabling",
               gjAllReduce(a, a, r0 ? 3 : 4, gjFloat32, gjSum, c, nullptr), gjInvalidUsage,
               "ranks passed different count (smallest 3, largest 4)", c);
}

// A mismatched request fails on every rank, the requests after it fail with its cause, and
// the communicator refuses new work.
void nonblocking_mismatch(Ctx& ctx, gjComm_t c) {
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float b[8] = {};
  gjRequest_t ok = nullptr, bad = nullptr, after = nullptr;
  expect_ok(ctx, F, "first request", gjIallReduce(a, a, 8, gjFloat32, gjSum, 1, 1, c, nullptr, &ok), c);
  expect_ok(ctx, F, "mismatched request",
            gjIallReduce(b, b, ctx.rank == 0 ? 3 : 4, gjFloat32, gjSum, 1, 1, c, nullptr, &bad), c);
  // The progress thread may already have failed the mismatched request: then this call is
  // refused at once; otherwise it is queued and fails with the earlier cause.
  const gjResult_t issued = gjIbroadcast(b, 8, gjFloat32, 0, c, nullptr, &after);
  if (issued != gjSuccess) {
    expect_error(ctx, F, "request after it (refused)", issued, gjInvalidUsage,
                 "the communicator stopped after a failed request", c);
    if (after != nullptr) ctx.fail(F, "a refused call returned a request");
  }
  expect_ok(ctx, F, "wait first", gjWait(ok));
  expect_error(ctx, F, "wait mismatched", gjWait(bad), gjInvalidUsage,
               "gjIallReduce: ranks passed different count (smallest 3, largest 4)");
  if (issued == gjSuccess) {
    expect_error(ctx, F, "wait later", gjWait(after), gjInvalidUsage, "an earlier request failed");
  }
  expect_error(ctx, F, "new work refused", gjAllReduce(a, a, 8, gjFloat32, gjSum, c, nullptr), gjInvalidUsage,
               "the communicator stopped after a failed request", c);
  gjRequest_t refused = nullptr;
  expect_error(ctx, F, "new request refused", gjIbarrier(c, &refused), gjInvalidUsage,
               "the communicator stopped after a failed request", c);
  if (refused != nullptr) ctx.fail(F, "a refused call returned a request");
}

// A grouped allreduce checks its tensor list by default (GJ_COLL_CHECK unset);
// gjCommSetCheck(c, 0) turns that check off too, for callers that guarantee matching lists.
// The probe: the same 32 elements split into tensors differently on rank 0. Checked, every
// rank fails; unchecked, the call runs and reduces the concatenation elementwise (the
// caller's responsibility; here the splits cover the same elements, so the sums are right).
void grouped_check_scope(Ctx& ctx) {
  gjComm_t c = nullptr;
  const MPI_Comm world = MPI_COMM_WORLD;
  expect_ok(ctx, F, "gjCommInitMpi (default check)", gjCommInitMpi(&c, &world));
  std::vector<float> a(32);
  const bool r0 = ctx.rank == 0;
  const auto split_call = [&] {
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i + 1);
    const void* sends[2] = {a.data(), a.data() + 16};
    void* recvs[2] = {a.data(), a.data() + 16};
    const std::size_t counts[2] = {16, 16};
    const void* whole_send[1] = {a.data()};
    void* whole_recv[1] = {a.data()};
    const std::size_t whole[1] = {32};
    return r0 ? gjGroupedAllReduce(whole_send, whole_recv, whole, 1, gjFloat32, gjSum, c, nullptr)
              : gjGroupedAllReduce(sends, recvs, counts, 2, gjFloat32, gjSum, c, nullptr);
  };
  expect_error(ctx, F, "grouped split differs, default check", split_call(), gjInvalidUsage,
               "gjGroupedAllReduce: ranks passed different", c);
  expect_ok(ctx, F, "gjCommDestroy", gjCommDestroy(c));

  expect_ok(ctx, F, "gjCommInitMpi", gjCommInitMpi(&c, &world));
  expect_ok(ctx, F, "gjCommSetCheck(0)", gjCommSetCheck(c, 0), c);
  expect_ok(ctx, F, "grouped split differs, check off", split_call(), c);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != static_cast<float>((i + 1) * static_cast<std::size_t>(ctx.size))) {
      ctx.fail(F, "unchecked grouped allreduce: element " + std::to_string(i) + " is " + std::to_string(a[i]));
      break;
    }
  }
  expect_ok(ctx, F, "gjCommSetCheck(1)", gjCommSetCheck(c, 1), c);
  expect_error(ctx, F, "grouped split differs, check on again", split_call(), gjInvalidUsage,
               "gjGroupedAllReduce: ranks passed different", c);
  expect_ok(ctx, F, "gjCommDestroy", gjCommDestroy(c));
}

}  // namespace

void run_mismatch_cases(Ctx& ctx) {
  if (ctx.size < 2) return;
  gjComm_t c = checked_comm(ctx);
  blocking_mismatches(ctx, c);
  nonblocking_mismatch(ctx, c);
  expect_ok(ctx, F, "destroy after a failed request", gjCommDestroy(c));
  grouped_check_scope(ctx);
}

}  // namespace gjt
