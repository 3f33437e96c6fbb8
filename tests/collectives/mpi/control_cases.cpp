// The control channel (gjIcontrolMax) and the late allgather (gjIallGatherVLate): the control
// MAX equals MPI's over every rank, completes while rank 0's nonblocking allreduce waits for
// peers that issue it only afterwards (outside the queue's order), and a late allgather gathers
// uneven counts its plan gives at run time, or moves nothing when every rank's plan skips; and
// their argument errors.
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "expect.h"
#include "harness.h"

namespace gjt {
namespace {

const Failure F = kNonblocking;

void control_max_equals_mpi(Ctx& ctx) {
  for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{1000}}) {
    std::vector<std::int64_t> mine(count), want(count);
    for (std::size_t i = 0; i < count; ++i) {
      mine[i] = static_cast<std::int64_t>((i * 7 + static_cast<std::size_t>(ctx.rank) * 13) % 29) - 14;
    }
    MPI_Allreduce(mine.data(), want.data(), static_cast<int>(count), MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    gjRequest_t r = nullptr;
    const std::string what = "gjIcontrolMax count=" + std::to_string(count);
    expect_ok(ctx, F, what, gjIcontrolMax(mine.data(), count, ctx.comm, &r), ctx.comm);
    if (r == nullptr) continue;
    int done = 0;
    while (done == 0 && gjTest(r, &done) == gjSuccess) {
    }
    if (mine != want) ctx.fail(F, what + ": the result differs from MPI_Allreduce(MPI_MAX)");
  }
}

// Without gj-mpirun's rank wrapper nobody is asked to stop: 0 on every rank, several calls in a
// row, beside the control channel's other calls (gj.torch's stop_requested under gj-mpirun:
// torch.gj_mpirun_restart.sigterm).
void stop_requested_without_a_wrapper(Ctx& ctx) {
  for (int i = 0; i < 3; ++i) {
    int stop = -1;
    expect_ok(ctx, F, "gjStopRequested", gjStopRequested(ctx.comm, &stop), ctx.comm);
    if (stop != 0) ctx.fail(F, "gjStopRequested without a wrapper: " + std::to_string(stop) + ", want 0");
  }
}

void control_passes_a_queued_collective(Ctx& ctx) {
  if (ctx.size < 2) return;
  float x[4] = {1, 1, 1, 1};
  gjRequest_t allreduce = nullptr;
  if (ctx.rank == 0) {
    expect_ok(ctx, F, "rank 0's early gjIallReduce", gjIallReduce(x, x, 4, gjFloat32, gjSum, 1, 1, ctx.comm, nullptr,
                                                                  &allreduce), ctx.comm);
  }
  std::int64_t v = ctx.rank;
  gjRequest_t control = nullptr;
  expect_ok(ctx, F, "gjIcontrolMax beside a queued request", gjIcontrolMax(&v, 1, ctx.comm, &control), ctx.comm);
  if (control != nullptr) expect_ok(ctx, F, "its gjWait", gjWait(control), ctx.comm);
  if (v != ctx.size - 1) ctx.fail(F, "gjIcontrolMax beside a queued request: " + std::to_string(v));
  if (ctx.rank != 0) {
    expect_ok(ctx, F, "the others' gjIallReduce", gjIallReduce(x, x, 4, gjFloat32, gjSum, 1, 1, ctx.comm, nullptr,
                                                               &allreduce), ctx.comm);
  }
  if (allreduce != nullptr) expect_ok(ctx, F, "the allreduce's gjWait", gjWait(allreduce), ctx.comm);
  if (x[0] != static_cast<float>(ctx.size)) ctx.fail(F, "the allreduce after the control call: " + std::to_string(x[0]));
}

struct Plan {
  int size = 0;
  bool skip = false;
  std::vector<std::int32_t>* recv = nullptr;
  int calls = 0;
};

int plan_counts(void* arg, size_t* recvcounts, void** recvbuff) {
  auto* p = static_cast<Plan*>(arg);
  ++p->calls;
  if (p->skip) return 1;
  std::size_t total = 0;
  for (int q = 0; q < p->size; ++q) total += recvcounts[q] = static_cast<std::size_t>(q + 1);
  p->recv->assign(total, -1);
  *recvbuff = p->recv->data();
  return 0;
}

void late_allgather(Ctx& ctx) {
  for (bool skip : {false, true}) {
    const std::string what = std::string("gjIallGatherVLate") + (skip ? " (every plan skips)" : "");
    std::vector<std::int32_t> send(static_cast<std::size_t>(ctx.rank) + 1, 100 + ctx.rank), recv;
    Plan plan{ctx.size, skip, &recv, 0};
    gjRequest_t r = nullptr;
    expect_ok(ctx, F, what, gjIallGatherVLate(send.data(), send.size(), gjInt32, plan_counts, &plan, ctx.comm, &r),
              ctx.comm);
    if (r != nullptr) expect_ok(ctx, F, what + ": gjWait", gjWait(r), ctx.comm);
    if (plan.calls != 1) ctx.fail(F, what + ": the plan ran " + std::to_string(plan.calls) + " times");
    std::vector<std::int32_t> want;
    for (int q = 0; q < ctx.size && !skip; ++q) want.insert(want.end(), static_cast<std::size_t>(q) + 1, 100 + q);
    if (recv != want) ctx.fail(F, what + ": wrong result");
  }
  float y = 1;
  expect_ok(ctx, F, "an allreduce after a skipped late allgather",
            gjAllReduce(&y, &y, 1, gjFloat32, gjSum, ctx.comm, nullptr), ctx.comm);
  if (y != static_cast<float>(ctx.size)) ctx.fail(F, "the allreduce after a skipped late allgather");
}

void argument_errors(Ctx& ctx) {
  std::int64_t v = 0;
  gjRequest_t r = nullptr;
  expect_error(ctx, F, "control count=0", gjIcontrolMax(&v, 0, ctx.comm, &r), gjInvalidArgument,
               "gjIcontrolMax: count=0 is out of range", ctx.comm);
  expect_error(ctx, F, "control count too large", gjIcontrolMax(&v, (std::size_t{1} << 20) + 1, ctx.comm, &r),
               gjInvalidArgument, "count=1048577 is out of range", ctx.comm);
  expect_error(ctx, F, "control values=NULL", gjIcontrolMax(nullptr, 2, ctx.comm, &r), gjInvalidArgument,
               "values=NULL with count=2", ctx.comm);
  expect_error(ctx, F, "control request=NULL", gjIcontrolMax(&v, 1, ctx.comm, nullptr), gjInvalidArgument,
               "request=NULL", ctx.comm);
  std::int32_t x = 0;
  expect_error(ctx, F, "late allgather plan=NULL", gjIallGatherVLate(&x, 1, gjInt32, nullptr, nullptr, ctx.comm, &r),
               gjInvalidArgument, "gjIallGatherVLate: plan=NULL", ctx.comm);
  if (r != nullptr) ctx.fail(F, "a rejected control or late call left a request handle");
}

}  // namespace

void run_control_cases(Ctx& ctx) {
  control_max_equals_mpi(ctx);
  control_passes_a_queued_collective(ctx);
  stop_requested_without_a_wrapper(ctx);
  late_allgather(ctx);
  argument_errors(ctx);
}

}  // namespace gjt
