// The planning of the operations beyond allreduce/broadcast: scaling, data movement of every
// dtype, per-rank counts, which rank placements NCCL refuses, owned-buffer growth.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "dtype.h"
#include "error.h"
#include "nccl/nccl_buffer.h"
#include "nccl/nccl_plan.h"
#include "nccl/nccl_watchdog.h"

using namespace gj::nccl;

TEST_CASE("plan_scaled: {1,1} is plan_allreduce exactly") {
  for (int d = 0; d < gjNumReducibleDataTypes; ++d) {
    for (int o = 0; o < gjNumRedOps; ++o) {
      for (int n : {1, 2, 3, 8}) {
        const auto dt = static_cast<gjDataType_t>(d);
        const auto op = static_cast<gjRedOp_t>(o);
        const ScaledPlan s = plan_scaled(dt, op, n, 1.0, 1.0);
        const AllreducePlan p = plan_allreduce(dt, op, n);
        CHECK(s.reduce.op == p.op);
        CHECK(s.reduce.prescale == p.prescale);
        CHECK(s.reduce.postdivide == p.postdivide);
        CHECK(s.postscale == 0.0);
      }
    }
  }
}

namespace {

// plan_scaled(dtype, op, ranks, prescale, postscale) and the plan it must give.
struct ScaledCase {
  const char* what;
  gjDataType_t dtype;
  gjRedOp_t op;
  int ranks;
  double prescale, postscale;
  ncclRedOp_t want_op;
  double want_prescale;
  int want_postdivide;
  double want_postscale;
};

void check_plan(const ScaledCase& c) {
  INFO(c.what);
  const ScaledPlan p = plan_scaled(c.dtype, c.op, c.ranks, c.prescale, c.postscale);
  CHECK(p.reduce.op == c.want_op);
  CHECK(p.reduce.prescale == c.want_prescale);
  CHECK(p.reduce.postdivide == c.want_postdivide);
  CHECK(p.postscale == c.want_postscale);
}

}  // namespace

TEST_CASE("plan_scaled: avg on floats folds prescale and 1/n into one factor") {
  const ScaledCase cases[] = {
      {"f16 avg, 4 ranks, prescale 0.5: ncclSum, not ncclAvg (the factor already divides)", gjFloat16, gjAvg, 4, 0.5,
       1.0, ncclSum, 0.125, 0, 0.0},
      {"f32 avg, 3 ranks, prescale 2, postscale 10", gjFloat32, gjAvg, 3, 2.0, 10.0, ncclSum, 2.0 / 3, 0, 10.0},
      {"bf16 avg, 2 ranks, postscale alone: avg's own plan (ncclAvg for a power of two)", gjBfloat16, gjAvg, 2, 1.0,
       3.0, ncclAvg, 0.0, 0, 3.0},
  };
  for (const ScaledCase& c : cases) check_plan(c);
}

TEST_CASE("plan_scaled: integers scale before the sum, divide (avg), then postscale") {
  const ScaledCase cases[] = {
      {"i32 avg, 3 ranks, prescale 2, postscale 0.5", gjInt32, gjAvg, 3, 2.0, 0.5, ncclSum, 2.0, 3, 0.5},
      {"u8 max, 5 ranks, prescale 3", gjUint8, gjMax, 5, 3.0, 1.0, ncclMax, 3.0, 0, 0.0},
  };
  for (const ScaledCase& c : cases) check_plan(c);
}

TEST_CASE("to_movement: every dtype moves bit for bit") {
  struct Row {
    gjDataType_t dtype;
    ncclDataType_t nccl;
    std::size_t count;  // for 10 elements
    std::size_t bytes;  // per element
  };
  const std::vector<Row> rows = {
      {gjFloat32, ncclFloat32, 10, 4}, {gjFloat64, ncclFloat64, 10, 8}, {gjFloat16, ncclFloat16, 10, 2},
      {gjBfloat16, ncclBfloat16, 10, 2}, {gjInt32, ncclInt32, 10, 4},   {gjInt64, ncclInt64, 10, 8},
      {gjUint8, ncclUint8, 10, 1},     {gjInt8, ncclInt8, 10, 1},       {gjInt16, ncclUint8, 20, 2},
      {gjBool, ncclUint8, 10, 1},      {gjByte, ncclUint8, 10, 1}};
  REQUIRE(rows.size() == gjNumDataTypes);
  for (const Row& r : rows) {
    INFO("dtype=" << r.dtype);
    const Movement m = to_movement(r.dtype, 10);
    CHECK(m.dtype == r.nccl);
    CHECK(m.count == r.count);
    CHECK(gj::dtype_size(r.dtype) == r.bytes);
    // The bytes NCCL moves are the bytes of the elements.
    CHECK(m.count * gj::dtype_size(gjUint8) * (r.nccl == ncclUint8 || r.nccl == ncclInt8 ? 1 : r.bytes) ==
          10 * r.bytes);
  }
  CHECK(gj::dtype_size(gjNumDataTypes) == 0);
  CHECK_THROWS_AS(to_movement(gjNumDataTypes, 1), gj::Error);
}

TEST_CASE("plan_per_rank: equal counts take the one-call collective") {
  const std::size_t eq[] = {5, 5, 5};
  const PerRankPlan p = plan_per_rank(eq, 3);
  CHECK(p.equal);
  CHECK(p.count == 5);
  CHECK(p.total == 15);
  CHECK(p.slices.empty());
  const std::size_t zeros[] = {0, 0};
  CHECK(plan_per_rank(zeros, 2).equal);
  CHECK(plan_per_rank(zeros, 2).total == 0);
}

TEST_CASE("plan_per_rank: unequal counts list the non-empty slices with their offsets") {
  const std::size_t counts[] = {3, 0, 7, 1};
  const PerRankPlan p = plan_per_rank(counts, 4);
  CHECK_FALSE(p.equal);
  CHECK(p.total == 11);
  REQUIRE(p.slices.size() == 3);
  CHECK((p.slices[0].rank == 0 && p.slices[0].offset == 0 && p.slices[0].count == 3));
  CHECK((p.slices[1].rank == 2 && p.slices[1].offset == 3 && p.slices[1].count == 7));
  CHECK((p.slices[2].rank == 3 && p.slices[2].offset == 10 && p.slices[2].count == 1));
  CHECK_THROWS_AS(plan_per_rank(counts, 0), gj::Error);
}


TEST_CASE("plan_buffer_use: never allocates during CUDA graph capture") {
  CHECK(plan_buffer_use(0, false, 1, false) == BufferAction::Grow);
  CHECK(plan_buffer_use(0, false, 1, true) == BufferAction::RefuseCapture);
  CHECK(plan_buffer_use(64, true, 64, true) == BufferAction::Reuse);
  CHECK(plan_buffer_use(64, true, 65, true) == BufferAction::RefuseCapture);
  CHECK(plan_buffer_use(64, true, 65, false) == BufferAction::Grow);
  CHECK(plan_buffer_use(64, true, 1, false) == BufferAction::Reuse);
  CHECK(may_free_on_grow(false));
  CHECK_FALSE(may_free_on_grow(true));  // instantiated graphs may still point into it
}

TEST_CASE("watchdog: judge and watch_period") {
  CHECK(judge(ncclSuccess, -1, 1000) == Verdict::Healthy);
  CHECK(judge(ncclInProgress, 500, 1000) == Verdict::Healthy);
  CHECK(judge(ncclSuccess, 1001, 1000) == Verdict::TimedOut);
  CHECK(judge(ncclSuccess, 1000000, 0) == Verdict::Healthy);  // GJ_COLL_TIMEOUT_MS=0: wait forever
  CHECK(judge(ncclRemoteError, -1, 1000) == Verdict::AsyncError);
  CHECK(judge(ncclSystemError, 5000, 1000) == Verdict::AsyncError);  // the cause, not its symptom
  CHECK(watch_period(300000) == std::chrono::milliseconds(100));
  CHECK(watch_period(3000) == std::chrono::milliseconds(60));
  CHECK(watch_period(10) == std::chrono::milliseconds(2));
  CHECK(watch_period(0) == std::chrono::milliseconds(100));
}

namespace {
gj::nccl::Placement placed(const char* host, const char* bus, const char* boot_id = "boot-1") {
  gj::nccl::Placement p;
  p.ok = 1;
  std::snprintf(p.host, sizeof p.host, "%s", host);
  std::snprintf(p.bus_id, sizeof p.bus_id, "%s", bus);
  p.host_hash = gj::nccl::host_hash(host, boot_id, "");
  return p;
}

gj::nccl::VisibleDevices seen(const char* host, std::vector<const char*> buses, const char* boot_id = "boot-1") {
  gj::nccl::VisibleDevices v;
  v.host_hash = gj::nccl::host_hash(host, boot_id, "");
  std::snprintf(v.host, sizeof v.host, "%s", host);
  v.count = static_cast<int>(buses.size());
  for (std::size_t i = 0; i < buses.size(); ++i) std::snprintf(v.bus_ids[i], sizeof v.bus_ids[i], "%s", buses[i]);
  return v;
}
}  // namespace

TEST_CASE("host_hash: hostname and boot id tell hosts apart, NCCL_HOSTID replaces both") {
  using gj::nccl::host_hash;
  CHECK(host_hash("node", "boot-1", "") == host_hash("node", "boot-1", ""));
  CHECK(host_hash("node", "boot-1", "") != host_hash("node", "boot-2", ""));  // one image's hostname, two machines
  CHECK(host_hash("a", "boot-1", "rack3") == host_hash("b", "boot-2", "rack3"));
  CHECK(host_hash("a", "boot-1", "") != host_hash("a", "boot-1", "rack3"));
}

TEST_CASE("shared_device: one hostname on two machines (different boot ids) is two hosts") {
  const std::vector<gj::nccl::Placement> two_machines{placed("node", "0000:01:00.0", "boot-1"),
                                                      placed("node", "0000:01:00.0", "boot-2")};
  CHECK(gj::nccl::shared_device(two_machines, 22809, false).empty());
}

TEST_CASE("too_many_ranks: more ranks on a host than distinct visible devices, with the fix") {
  using gj::nccl::too_many_ranks;
  // Each rank sees only its own device (CUDA_VISIBLE_DEVICES per rank): two devices, two ranks.
  CHECK(too_many_ranks({seen("a", {"0000:01:00.0"}), seen("a", {"0000:02:00.0"})}, 22809, false).empty());
  // Four ranks, two devices: refused, naming the host, the counts and what to change.
  const std::vector<gj::nccl::VisibleDevices> four{seen("a", {"0000:01:00.0", "0000:02:00.0"}),
                                                   seen("a", {"0000:01:00.0", "0000:02:00.0"}),
                                                   seen("a", {"0000:01:00.0", "0000:02:00.0"}),
                                                   seen("a", {"0000:01:00.0", "0000:02:00.0"}),
                                                   seen("b", {"0000:01:00.0"})};
  const std::string why = too_many_ranks(four, 22809, false);
  CHECK(why.find("4 ranks on host a but only 2 CUDA devices") != std::string::npos);
  CHECK(why.find("-npernode 2") != std::string::npos);
  CHECK(why.find("GJ_COLL_BACKEND=mpi") != std::string::npos);
  CHECK(why.find("2.28.9") != std::string::npos);
  CHECK_FALSE(too_many_ranks(four, 22809, true).empty());  // 2.28 refuses whatever the variable says
  CHECK(too_many_ranks(four, 23000, true).empty());
  // The same hostname on two machines: two ranks each, two devices each.
  CHECK(too_many_ranks({seen("n", {"x", "y"}, "b1"), seen("n", {"x", "y"}, "b1"), seen("n", {"x", "y"}, "b2"),
                        seen("n", {"x", "y"}, "b2")},
                       22809, false)
            .empty());
  // A host without devices is not this check's business (device buffers say so when used).
  CHECK(too_many_ranks({seen("c", {}), seen("c", {})}, 22809, false).empty());
}

TEST_CASE("shared_device: two ranks on one device of one host, unless NCCL >= 2.30 allows it") {
  using gj::nccl::shared_device;
  const std::vector<gj::nccl::Placement> distinct{placed("a", "0000:01:00.0"), placed("a", "0000:02:00.0"),
                                                  placed("b", "0000:01:00.0"), placed("b", "0000:02:00.0")};
  CHECK(shared_device(distinct, 22809, false).empty());
  const std::vector<gj::nccl::Placement> shared{placed("a", "0000:01:00.0"), placed("b", "0000:01:00.0"),
                                                placed("a", "0000:01:00.0")};
  const std::string why = shared_device(shared, 22809, false);
  CHECK(why.find("ranks 0 and 2") != std::string::npos);
  CHECK(why.find("0000:01:00.0") != std::string::npos);
  CHECK(why.find("host a") != std::string::npos);
  CHECK(why.find("2.28.9") != std::string::npos);
  CHECK(why.find("NCCL_MULTI_RANK_GPU_ENABLE=1") != std::string::npos);
  CHECK_FALSE(shared_device(shared, 22809, true).empty());  // 2.28 refuses whatever the variable says
  CHECK_FALSE(shared_device(shared, 23000, false).empty());
  CHECK(shared_device(shared, 23000, true).empty());
}
