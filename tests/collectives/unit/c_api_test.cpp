// C ABI and C++ wrapper behaviour that needs no MPI: handles that are not communicators,
// error strings, dtype sizes, exception mapping.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "../raw_calls.h"
#include "gj/collectives.h"
#include "gj/collectives.hpp"

TEST_CASE("every result code has its own error string", "[c_api]") {
  std::set<std::string> seen;
  for (int code = 0; code < gjNumResults; ++code) {
    const std::string s = gjGetErrorString(static_cast<gjResult_t>(code));
    CHECK_FALSE(s.empty());
    CHECK(seen.insert(s).second);
  }
  CHECK(std::string(raw_error_string(99)) == "unknown result code");
}

TEST_CASE("gjDataTypeSize", "[c_api]") {
  const std::pair<int, std::size_t> rows[] = {{gjFloat32, 4}, {gjFloat64, 8}, {gjFloat16, 2}, {gjBfloat16, 2},
                                              {gjInt32, 4},   {gjInt64, 8},   {gjUint8, 1},     {gjInt8, 1},
                                              {gjInt16, 2},   {gjBool, 1},    {gjByte, 1},      {11, 0},
                                              {-1, 0},        {1000, 0}};
  for (const auto& r : rows) CHECK(raw_dtype_size(r.first) == r.second);
}

TEST_CASE("calls on a NULL or unknown handle fail with gjInvalidUsage, without dereferencing it", "[c_api]") {
  float x = 0;
  int i = 0;
  CHECK(gjAllReduce(&x, &x, 1, gjFloat32, gjSum, nullptr, nullptr) == gjInvalidUsage);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjAllReduce: comm=NULL"));
  auto* bogus = reinterpret_cast<gjComm_t>(static_cast<void*>(&x));  // never created
  CHECK(gjCommRank(bogus, &i) == gjInvalidUsage);
  CHECK_THAT(std::string(gjGetLastError(bogus)), Catch::Contains("is not a live communicator"));
  CHECK(gjCommDestroy(bogus) == gjInvalidUsage);
  CHECK(gjCommAbort(nullptr) == gjInvalidUsage);
  CHECK(gjBroadcast(&x, 1, gjFloat32, 0, bogus, nullptr) == gjInvalidUsage);
  CHECK(gjGroupedAllReduce(nullptr, nullptr, nullptr, 0, gjFloat32, gjSum, bogus, nullptr) == gjInvalidUsage);
  CHECK(gjCommSetFusionThreshold(bogus, 10) == gjInvalidUsage);
  CHECK(gjCommInitWorld(nullptr) == gjInvalidArgument);
  CHECK(gjFinalize() == gjSuccess);  // nothing to finalize: MPI was never initialized here
}

TEST_CASE("collectives.hpp maps every result code to its exception type", "[cpp]") {
  CHECK_NOTHROW(gj::check(gjSuccess));
  CHECK_THROWS_AS(gj::check(gjInvalidArgument), gj::InvalidArgumentError);
  CHECK_THROWS_AS(gj::check(gjInvalidUsage), gj::InvalidUsageError);
  CHECK_THROWS_AS(gj::check(gjUnsupported), gj::UnsupportedError);
  CHECK_THROWS_AS(gj::check(gjSystemError), gj::SystemError);
  CHECK_THROWS_AS(gj::check(gjMpiError), gj::MpiError);
  CHECK_THROWS_AS(gj::check(gjNcclError), gj::NcclError);
  CHECK_THROWS_AS(gj::check(gjCudaError), gj::CudaError);
  CHECK_THROWS_AS(gj::check(gjTimeout), gj::TimeoutError);
  CHECK_THROWS_AS(gj::check(gjInternalError), gj::InternalError);
  CHECK_THROWS_AS(gj::check(gjPeerLost), gj::PeerLostError);
  try {
    gj::Communicator empty(nullptr);
    (void)empty.size();
    FAIL("no exception");
  } catch (const gj::CollectivesError& e) {
    CHECK(e.code() == gjInvalidUsage);
    CHECK_THAT(std::string(e.what()), Catch::Contains("gjCommSize: comm=NULL"));
  }
  STATIC_REQUIRE(gj::dtype_of_v<float> == gjFloat32);
  STATIC_REQUIRE(gj::dtype_of_v<const double> == gjFloat64);
  STATIC_REQUIRE(gj::dtype_of_v<std::int32_t> == gjInt32);
  STATIC_REQUIRE(gj::dtype_of_v<std::int64_t> == gjInt64);
  STATIC_REQUIRE(gj::dtype_of_v<std::uint8_t> == gjUint8);
  STATIC_REQUIRE(gj::dtype_of_v<gj::float16> == gjFloat16);
  STATIC_REQUIRE(gj::dtype_of_v<gj::bfloat16> == gjBfloat16);
}

TEST_CASE("gjWait / gjTest on a NULL or never-issued request fail with gjInvalidUsage, without dereferencing it",
          "[c_api]") {
  int done = 5;
  CHECK(gjWait(nullptr) == gjInvalidUsage);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjWait: request=NULL"));
  float x = 0;
  auto* bogus = reinterpret_cast<gjRequest_t>(static_cast<void*>(&x));
  CHECK(gjTest(bogus, &done) == gjInvalidUsage);
  CHECK(done == 0);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::Contains("is not a live request"));
  CHECK(gjTest(bogus, nullptr) == gjInvalidArgument);
  CHECK((gjBuildCapabilities() & ~(gjCapCuda | gjCapNccl)) == 0);
}

TEST_CASE("every nonblocking call checks its request pointer before its communicator", "[c_api]") {
  std::int64_t v = 0;
  float x = 0;
  // Both arguments are wrong: the documented order reports the request pointer.
  CHECK(gjIcontrolMax(&v, 1, nullptr, nullptr) == gjInvalidArgument);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjIcontrolMax: request=NULL"));
  CHECK(gjIallReduce(&x, &x, 1, gjFloat32, gjSum, 1.0, 1.0, nullptr, nullptr, nullptr) == gjInvalidArgument);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjIallReduce: request=NULL"));
  CHECK(gjIbarrier(nullptr, nullptr) == gjInvalidArgument);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjIbarrier: request=NULL"));
  gjRequest_t r = nullptr;
  CHECK(gjIcontrolMax(&v, 1, nullptr, &r) == gjInvalidUsage);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjIcontrolMax: comm=NULL"));
}

TEST_CASE("gjStopRequested checks its out pointer, then its communicator, and answers 0 on a failure", "[c_api][stop]") {
  CHECK(gjStopRequested(nullptr, nullptr) == gjInvalidArgument);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjStopRequested: stop=NULL"));
  int stop = 7;
  CHECK(gjStopRequested(nullptr, &stop) == gjInvalidUsage);
  CHECK(stop == 0);
  CHECK_THAT(std::string(gjGetLastError(nullptr)), Catch::StartsWith("gjStopRequested: comm=NULL"));
}

// The NCCL query asks the library's own search: a GJ_NCCL_LIBRARY that does not load is
// gjUnsupported with the search's reason, as for a communicator's first device collective.
// (gjNcclVersion with a library that loads: coll.unit.nccl_version.fake, GJ_EXPECT_NCCL_VERSION.)
TEST_CASE("gjNcclVersion reports the NCCL library the library would load", "[c_api][nccl_version]") {
  int version = -1;
  CHECK(gjNcclVersion(nullptr) == gjInvalidArgument);
  const char* expected = std::getenv("GJ_EXPECT_NCCL_VERSION");
  if (expected != nullptr) {
    REQUIRE(gjNcclVersion(&version) == gjSuccess);
    CHECK(version == std::atoi(expected));
    return;
  }
  setenv("GJ_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  CHECK(gjNcclVersion(&version) == gjUnsupported);
  CHECK(version == 0);
  const std::string why = gjGetLastError(nullptr);
  CHECK_THAT(why, Catch::StartsWith("gjNcclVersion: "));
  if ((gjBuildCapabilities() & gjCapNccl) != 0) CHECK_THAT(why, Catch::Contains("/nonexistent/libnccl.so.2"));
}
