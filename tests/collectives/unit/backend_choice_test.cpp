#include <catch2/catch.hpp>

#include "backend_choice.h"
#include "error.h"

using gj::BackendChoice;

namespace {
gj::Config with(BackendChoice b) {
  gj::Config c;
  c.backend = b;
  return c;
}
}  // namespace

TEST_CASE("plan_backends: config x build x devices", "[backend]") {
  struct Row {
    BackendChoice choice;
    bool nccl_built;
    int devices;
    bool use_nccl;
    const char* reason;  // substring of no_nccl_reason ("" when NCCL is used)
  };
  const Row rows[] = {
      {BackendChoice::Auto, true, 1, true, ""},
      {BackendChoice::Auto, true, 8, true, ""},
      {BackendChoice::Auto, true, 0, false, "no CUDA device"},
      {BackendChoice::Auto, false, 4, false, "no NCCL backend"},
      {BackendChoice::Auto, false, 0, false, "no NCCL backend"},
      {BackendChoice::Mpi, true, 4, false, "GJ_COLL_BACKEND=mpi"},
      {BackendChoice::Mpi, false, 0, false, "GJ_COLL_BACKEND=mpi"},
      {BackendChoice::Nccl, true, 2, true, ""},
  };
  for (const Row& r : rows) {
    INFO("choice=" << static_cast<int>(r.choice) << " built=" << r.nccl_built << " devices=" << r.devices);
    const gj::BackendPlan plan = gj::plan_backends(with(r.choice), {r.nccl_built, r.devices});
    CHECK(plan.use_nccl == r.use_nccl);
    CHECK_THAT(plan.no_nccl_reason, Catch::Contains(r.reason));
    CHECK(gj::backend_for(plan, false, "call") == gjBackendMpi);
    if (r.use_nccl) CHECK(gj::backend_for(plan, true, "call") == gjBackendNccl);
  }
}

TEST_CASE("plan_backends: GJ_COLL_BACKEND=nccl fails when NCCL cannot be used", "[backend]") {
  struct Row {
    bool nccl_built;
    int devices;
    const char* reason;
  };
  const Row rows[] = {{false, 1, "no NCCL backend"}, {true, 0, "no CUDA device"}, {false, 0, "no NCCL backend"}};
  for (const Row& r : rows) {
    try {
      gj::plan_backends(with(BackendChoice::Nccl), {r.nccl_built, r.devices});
      FAIL("accepted");
    } catch (const gj::Error& e) {
      CHECK(e.code() == gjUnsupported);
      CHECK_THAT(std::string(e.what()), Catch::Contains("GJ_COLL_BACKEND=nccl but") && Catch::Contains(r.reason));
    }
  }
}

TEST_CASE("backend_for: a device buffer without NCCL is unsupported, naming the call and why", "[backend]") {
  const gj::BackendPlan plan = gj::plan_backends(with(BackendChoice::Auto), {false, 0});
  try {
    gj::backend_for(plan, true, "gjAllReduce");
    FAIL("accepted");
  } catch (const gj::Error& e) {
    CHECK(e.code() == gjUnsupported);
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("gjAllReduce: device buffer but") &&
                                          Catch::Contains("no NCCL backend"));
  }
}
