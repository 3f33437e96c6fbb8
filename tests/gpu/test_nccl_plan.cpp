// What the NCCL backend enqueues for each (dtype, op, rank count): the library's arithmetic
// (gj/collectives.h) is kept where NCCL's own differs.
#include <catch2/catch.hpp>

#include <vector>

#include "dtype.h"
#include "error.h"
#include "nccl/nccl_plan.h"

using gj::nccl::plan_allreduce;

TEST_CASE("to_nccl maps every dtype") {
  struct Row {
    gjDataType_t dtype;
    ncclDataType_t nccl;
  };
  const std::vector<Row> rows = {{gjFloat32, ncclFloat32}, {gjFloat64, ncclFloat64}, {gjFloat16, ncclFloat16},
                                 {gjBfloat16, ncclBfloat16}, {gjInt32, ncclInt32},   {gjInt64, ncclInt64},
                                 {gjUint8, ncclUint8}};
  REQUIRE(rows.size() == gjNumReducibleDataTypes);
  for (const Row& r : rows) CHECK(gj::nccl::to_nccl(r.dtype) == r.nccl);
  // Data-movement dtypes have no reduction type (to_movement maps them).
  for (gjDataType_t d : {gjInt8, gjInt16, gjBool, gjByte, gjNumDataTypes}) {
    CHECK_THROWS_AS(gj::nccl::to_nccl(d), gj::Error);
  }
}

TEST_CASE("plan_allreduce: ops other than avg map one to one") {
  struct Row {
    gjRedOp_t op;
    ncclRedOp_t nccl;
  };
  const std::vector<Row> rows = {{gjSum, ncclSum}, {gjMin, ncclMin}, {gjMax, ncclMax}, {gjProd, ncclProd}};
  for (const Row& r : rows) {
    for (int d = 0; d < gjNumReducibleDataTypes; ++d) {
      const auto p = plan_allreduce(static_cast<gjDataType_t>(d), r.op, 3);
      CHECK(p.op == r.nccl);
      CHECK(p.prescale == 0.0);
      CHECK(p.postdivide == 0);
    }
  }
  CHECK_THROWS_AS(plan_allreduce(gjFloat32, gjNumRedOps, 2), gj::Error);
}

TEST_CASE("plan_allreduce: avg") {
  struct Row {
    gjDataType_t dtype;
    int nranks;
    ncclRedOp_t op;
    double prescale;
    int postdivide;
  };
  const std::vector<Row> rows = {
      // power-of-two rank counts: NCCL's pre-multiplication by 1/n is exact
      {gjFloat32, 1, ncclAvg, 0.0, 0},
      {gjFloat16, 2, ncclAvg, 0.0, 0},
      {gjBfloat16, 4, ncclAvg, 0.0, 0},
      {gjFloat64, 64, ncclAvg, 0.0, 0},
      // otherwise pre-scale like the MPI backend, then sum
      {gjFloat32, 3, ncclSum, 1.0 / 3, 0},
      {gjFloat16, 6, ncclSum, 1.0 / 6, 0},
      {gjBfloat16, 7, ncclSum, 1.0 / 7, 0},
      {gjFloat64, 12, ncclSum, 1.0 / 12, 0},
      // integers: wrapping sum, then truncating division
      {gjInt32, 1, ncclSum, 0.0, 0},
      {gjInt32, 2, ncclSum, 0.0, 2},
      {gjInt64, 3, ncclSum, 0.0, 3},
      {gjUint8, 300, ncclSum, 0.0, 300},
  };
  for (const Row& r : rows) {
    INFO("dtype=" << gj::dtype_name(r.dtype) << " nranks=" << r.nranks);
    const auto p = plan_allreduce(r.dtype, gjAvg, r.nranks);
    CHECK(p.dtype == gj::nccl::to_nccl(r.dtype));
    CHECK(p.op == r.op);
    CHECK(p.prescale == r.prescale);
    CHECK(p.postdivide == r.postdivide);
  }
}

TEST_CASE("describe names the call, count, dtype and op or root") {
  CHECK(gj::nccl::describe({"unpack", 96, gjUint8, gjSum, gj::nccl::Operation::kCopy}) == "unpack(count=96, dtype=u8)");
  CHECK(gj::nccl::describe({"ncclAllReduce", 1024, gjBfloat16, gjAvg, gj::nccl::Operation::kReduction}) ==
        "ncclAllReduce(count=1024, dtype=bf16, op=avg)");
  CHECK(gj::nccl::describe({"ncclBroadcast", 0, gjUint8, gjSum, 3}) == "ncclBroadcast(count=0, dtype=u8, root=3)");
}

TEST_CASE("poll_pause_us: yields for 2 ms, then sleeps at most 1/32 of the wait so far, 20 us to 1 ms") {
  using gj::nccl::poll_pause_us;
  CHECK(poll_pause_us(0) == 0);
  CHECK(poll_pause_us(1999) == 0);
  CHECK(poll_pause_us(2000) == 62);
  CHECK(poll_pause_us(3200) == 100);  // 3 % of 3.2 ms, not a fixed 200 us
  CHECK(poll_pause_us(32000) == 1000);
  CHECK(poll_pause_us(10000000) == 1000);
  for (long t = 2000; t < 100000; t += 777) CHECK(poll_pause_us(t) * 32 <= t + 32 * 20);
}
