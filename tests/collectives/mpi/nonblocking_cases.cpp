// Nonblocking requests: hundreds in flight (one per "gradient"), fused (the default fusion
// threshold) and unfused (threshold 0), each result bitwise equal to the blocking call's;
// every kind of request mixed in one queue, completed by gjWait and by polling gjTest in
// another order than issued; a blocking call after queued requests; and request misuse
// (completed, never issued, NULL) rejected with gjInvalidUsage.
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "expect.h"
#include "harness.h"
#include "scaled_values.h"

namespace gjt {
namespace {

const Failure F = kNonblocking;

// Tensor k's element count: small and large, some empty, like a model's gradients.
std::size_t tensor_count(std::size_t k) {
  const std::size_t sizes[] = {1, 64, 0, 2048, 7, 9000, 513, 33};
  return sizes[k % 8] * (1 + k % 3);
}

void many_allreduces(Ctx& ctx, std::size_t threshold, gjDataType_t d, gjRedOp_t op) {
  const std::size_t esz = elem_size(d);
  constexpr std::size_t kTensors = 300;
  const std::string what = std::string("300 requests dtype=") + dname(d) + " op=" + oname(op) +
                           " threshold=" + std::to_string(threshold);
  expect_ok(ctx, F, "set threshold", gjCommSetFusionThreshold(ctx.comm, threshold), ctx.comm);
  std::vector<std::vector<unsigned char>> bufs(kTensors), want(kTensors);
  std::size_t first = 0;
  for (std::size_t k = 0; k < kTensors; ++k) {
    bufs[k] = inputs_of(d, op, ctx.rank, ctx.size, first, tensor_count(k));
    want[k] = bufs[k];
    first += tensor_count(k);
  }
  // The blocking reference, one call per tensor.
  for (std::size_t k = 0; k < kTensors; ++k) {
    const std::size_t n = tensor_count(k);
    if (gjAllReduceScaled(n ? want[k].data() : nullptr, n ? want[k].data() : nullptr, n, d, op, 2.0, 0.5, ctx.comm,
                          nullptr) != gjSuccess) {
      ctx.fail(F, what + ": blocking reference failed: " + gjGetLastError(ctx.comm));
      return;
    }
  }
  std::vector<gjRequest_t> reqs(kTensors, nullptr);
  for (std::size_t k = 0; k < kTensors; ++k) {
    const std::size_t n = tensor_count(k);
    void* p = n ? bufs[k].data() : nullptr;
    const gjResult_t rc = gjIallReduce(p, p, n, d, op, 2.0, 0.5, ctx.comm, nullptr, &reqs[k]);
    if (rc != gjSuccess) ctx.fail(F, what + ": gjIallReduce " + std::to_string(k) + ": " + gjGetLastError(ctx.comm));
  }
  // Complete the odd ones by polling, the even ones by waiting, from the last to the first.
  std::size_t pending = 0;
  for (std::size_t k = kTensors; k-- > 0;) {
    if (reqs[k] == nullptr) continue;
    if (k % 2 == 0) {
      if (gjWait(reqs[k]) != gjSuccess) ctx.fail(F, what + ": wait " + std::to_string(k) + ": " + gjGetLastError(nullptr));
      reqs[k] = nullptr;
    } else {
      ++pending;
    }
  }
  for (int spins = 0; pending > 0 && spins < 10000000; ++spins) {
    for (std::size_t k = 1; k < kTensors; k += 2) {
      if (reqs[k] == nullptr) continue;
      int done = 0;
      const gjResult_t rc = gjTest(reqs[k], &done);
      if (rc != gjSuccess) ctx.fail(F, what + ": test " + std::to_string(k) + ": " + gjGetLastError(nullptr));
      if (done || rc != gjSuccess) {
        reqs[k] = nullptr;
        --pending;
      }
    }
  }
  if (pending > 0) ctx.fail(F, what + ": " + std::to_string(pending) + " requests never completed");
  for (std::size_t k = 0; k < kTensors; ++k) {
    const std::size_t n = tensor_count(k);
    const std::size_t bad = first_difference(bufs[k].data(), want[k].data(), n, esz);
    if (bad < n) {
      ctx.fail(F, what + ": tensor " + std::to_string(k) + " differs from the blocking call at " + std::to_string(bad));
      break;
    }
  }
}

// One of every kind in one queue, then a blocking allreduce that must run after them.
void mixed_queue(Ctx& ctx) {
  const int n = ctx.size;
  std::vector<float> ar(1000, 1.0f), bc(100, ctx.rank == 0 ? 7.0f : 0.0f);
  std::vector<std::int16_t> mine(static_cast<std::size_t>(ctx.rank + 1), static_cast<std::int16_t>(ctx.rank));
  std::vector<std::size_t> counts;
  for (int r = 0; r < n; ++r) counts.push_back(static_cast<std::size_t>(r + 1));
  std::vector<std::int16_t> gathered(std::accumulate(counts.begin(), counts.end(), std::size_t{0}), -1);
  std::vector<std::size_t> rs_counts(static_cast<std::size_t>(n), 10);
  std::vector<double> rs_in(10 * static_cast<std::size_t>(n), 1.0), rs_out(10, 0.0);
  std::vector<std::int32_t> eq(4, ctx.rank), eq_out(4 * static_cast<std::size_t>(n), -1);
  float g1[3] = {1, 1, 1}, g2[5] = {2, 2, 2, 2, 2};
  const void* gs[2] = {g1, g2};
  void* gr[2] = {g1, g2};
  const std::size_t gc[2] = {3, 5};
  std::vector<gjRequest_t> reqs(7, nullptr);
  expect_ok(ctx, F, "Iallreduce", gjIallReduce(ar.data(), ar.data(), ar.size(), gjFloat32, gjSum, 1, 1, ctx.comm,
                                               nullptr, &reqs[0]), ctx.comm);
  expect_ok(ctx, F, "Ibroadcast", gjIbroadcast(bc.data(), bc.size(), gjFloat32, 0, ctx.comm, nullptr, &reqs[1]),
            ctx.comm);
  expect_ok(ctx, F, "IallGatherV", gjIallGatherV(mine.data(), gathered.data(), counts.data(), gjInt16, ctx.comm,
                                                 nullptr, &reqs[2]), ctx.comm);
  expect_ok(ctx, F, "IreduceScatter", gjIreduceScatter(rs_in.data(), rs_out.data(), rs_counts.data(), gjFloat64,
                                                       gjAvg, 1, 3, ctx.comm, nullptr, &reqs[3]), ctx.comm);
  expect_ok(ctx, F, "Ibarrier", gjIbarrier(ctx.comm, &reqs[4]), ctx.comm);
  expect_ok(ctx, F, "IallGather", gjIallGather(eq.data(), eq_out.data(), 4, gjInt32, ctx.comm, nullptr, &reqs[5]),
            ctx.comm);
  expect_ok(ctx, F, "IgroupedAllReduce", gjIgroupedAllReduce(gs, gr, gc, 2, gjFloat32, gjMax, 1, 1, ctx.comm,
                                                             nullptr, &reqs[6]), ctx.comm);
  // Blocking: runs after all of the above, so its input (ar) is already reduced once.
  expect_ok(ctx, F, "blocking after requests",
            gjAllReduce(ar.data(), ar.data(), ar.size(), gjFloat32, gjSum, ctx.comm, nullptr), ctx.comm);
  for (gjRequest_t r : reqs) {
    if (r != nullptr) expect_ok(ctx, F, "wait mixed", gjWait(r));
  }
  if (ar[999] != static_cast<float>(n * n)) ctx.fail(F, "blocking call did not run after the queued allreduce");
  if (bc[50] != 7.0f) ctx.fail(F, "Ibroadcast result");
  std::size_t at = 0;
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j <= r; ++j) {
      if (gathered[at++] != r) ctx.fail(F, "IallGatherV result at " + std::to_string(at - 1));
    }
  }
  for (double v : rs_out) {
    if (v != 3.0) ctx.fail(F, "IreduceScatter avg * 3 = " + std::to_string(v));
  }
  for (int r = 0; r < n; ++r) {
    if (eq_out[static_cast<std::size_t>(r) * 4 + 3] != r) ctx.fail(F, "IallGather result");
  }
  if (g1[2] != 1 || g2[4] != 2) ctx.fail(F, "IgroupedAllReduce max result");
}

void misuse(Ctx& ctx) {
  float x = 1;
  gjRequest_t r = nullptr;
  expect_ok(ctx, F, "Iallreduce", gjIallReduce(&x, &x, 1, gjFloat32, gjSum, 1, 1, ctx.comm, nullptr, &r), ctx.comm);
  expect_ok(ctx, F, "wait", gjWait(r));
  expect_error(ctx, F, "wait twice", gjWait(r), gjInvalidUsage, "gjWait: request=");
  int done = 7;
  expect_error(ctx, F, "test after wait", gjTest(r, &done), gjInvalidUsage, "is not a live request");
  if (done != 0) ctx.fail(F, "gjTest on a dead request left done != 0");
  auto* foreign = reinterpret_cast<gjRequest_t>(&x);
  expect_error(ctx, F, "foreign request", gjWait(foreign), gjInvalidUsage, "is not a live request");
  expect_error(ctx, F, "NULL request", gjWait(nullptr), gjInvalidUsage, "gjWait: request=NULL");
  expect_error(ctx, F, "NULL out pointer", gjIallReduce(&x, &x, 1, gjFloat32, gjSum, 1, 1, ctx.comm, nullptr, nullptr),
               gjInvalidArgument, "gjIallReduce: request=NULL", ctx.comm);
  gjRequest_t bad = reinterpret_cast<gjRequest_t>(&x);
  expect_error(ctx, F, "invalid argument gives no request",
               gjIallReduce(nullptr, &x, 1, gjFloat32, gjSum, 1, 1, ctx.comm, nullptr, &bad), gjInvalidArgument,
               "sendbuff=NULL", ctx.comm);
  if (bad != nullptr) ctx.fail(F, "a rejected call left a request handle");
  // A request may outlive its communicator: destroy completes it first.
  gjComm_t c = nullptr;
  const MPI_Comm world = MPI_COMM_WORLD;
  expect_ok(ctx, F, "init", gjCommInitMpi(&c, &world));
  float y[16] = {};
  gjRequest_t outlives = nullptr;
  expect_ok(ctx, F, "request before destroy", gjIallReduce(y, y, 16, gjFloat32, gjSum, 1, 1, c, nullptr, &outlives),
            c);
  expect_ok(ctx, F, "destroy with a request", gjCommDestroy(c));
  expect_ok(ctx, F, "wait after destroy", gjWait(outlives));
}

}  // namespace

void run_nonblocking_cases(Ctx& ctx) {
  std::size_t threshold = 0;
  gjCommGetFusionThreshold(ctx.comm, &threshold);
  many_allreduces(ctx, threshold, gjFloat32, gjSum);
  many_allreduces(ctx, 0, gjFloat32, gjSum);
  many_allreduces(ctx, threshold, gjBfloat16, gjAvg);
  many_allreduces(ctx, 4096, gjInt32, gjMax);  // batches cut by the threshold
  many_allreduces(ctx, threshold, gjFloat16, gjProd);
  gjCommSetFusionThreshold(ctx.comm, threshold);
  mixed_queue(ctx);
  misuse(ctx);
}

}  // namespace gjt
