#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "error.h"
#include "validate.h"

namespace v = gj::validate;

namespace {

void expect_invalid(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    FAIL("accepted; expected: " << message);
  } catch (const gj::Error& e) {
    CHECK(e.code() == gjInvalidArgument);
    CHECK_THAT(std::string(e.what()), Catch::Contains(message));
  }
}

}  // namespace

TEST_CASE("validate: dtype and op ranges", "[validate]") {
  for (int d = 0; d < gjNumDataTypes; ++d) CHECK_NOTHROW(v::dtype("c", d));
  for (int o = 0; o < gjNumRedOps; ++o) CHECK_NOTHROW(v::op("c", o));
  expect_invalid([] { v::dtype("gjAllReduce", 17); },
                 "gjAllReduce: dtype=17 is not a gjDataType_t (0..10)");
  expect_invalid([] { v::dtype("gjAllReduce", -1); }, "dtype=-1 is not");
  expect_invalid([] { v::dtype("x", gjNumDataTypes); }, "dtype=11 is not");
  expect_invalid([] { v::op("gjAllReduce", 9); }, "gjAllReduce: op=9 is not a gjRedOp_t (0..4)");
  expect_invalid([] { v::op("x", -2); }, "op=-2");
}

TEST_CASE("validate: reductions take only the reducible dtypes", "[validate]") {
  for (int d = 0; d < gjNumReducibleDataTypes; ++d) CHECK_NOTHROW(v::reducible("c", static_cast<gjDataType_t>(d)));
  const std::pair<gjDataType_t, const char*> movement[] = {
      {gjInt8, "i8"}, {gjInt16, "i16"}, {gjBool, "bool"}, {gjByte, "byte"}};
  for (const auto& [d, name] : movement) {
    try {
      v::reducible("gjReduceScatter", d);
      FAIL("accepted dtype " << name);
    } catch (const gj::Error& e) {
      CHECK(e.code() == gjUnsupported);
      CHECK_THAT(std::string(e.what()),
                 Catch::Contains(std::string("gjReduceScatter: dtype=") + name + " is for data movement only"));
    }
  }
}

TEST_CASE("validate: per-rank count arrays", "[validate]") {
  const std::size_t counts[] = {3, 0, 5};
  CHECK(v::rank_counts("c", "recvcounts", counts, 3, gjFloat32) == 8);
  expect_invalid([] { v::rank_counts("gjAllGatherV", "recvcounts", nullptr, 2, gjFloat32); },
                 "gjAllGatherV: recvcounts=NULL; pass one count per rank (2 entries)");
  const std::size_t huge[] = {1, SIZE_MAX / 2};
  expect_invalid([&] { v::rank_counts("c", "recvcounts", huge, 2, gjFloat32); }, "recvcounts[1]=");
  const std::size_t sum_too_big[] = {PTRDIFF_MAX / 6, PTRDIFF_MAX / 6, 5};
  expect_invalid([&] { v::rank_counts("c", "recvcounts", sum_too_big, 3, gjFloat32); },
                 "together exceed PTRDIFF_MAX bytes (at recvcounts[1])");
  expect_invalid([] { v::scale("c", NAN, 1.0); }, "prescale=nan is not finite");
  expect_invalid([] { v::scale("c", 1.0, INFINITY); }, "postscale=inf is not finite");
}

TEST_CASE("validate: byte sizes that no buffer can have", "[validate]") {
  struct Row {
    std::size_t count;
    gjDataType_t dtype;
    bool ok;
  };
  const std::size_t pmax = static_cast<std::size_t>(PTRDIFF_MAX);
  const Row rows[] = {
      {0, gjFloat32, true},        {1, gjFloat64, true},         {pmax / 4, gjFloat32, true},
      {pmax / 4 + 1, gjFloat32, false}, {pmax, gjUint8, true},  {pmax + 1, gjUint8, false},
      {SIZE_MAX, gjUint8, false},  {SIZE_MAX, gjFloat64, false}, {SIZE_MAX / 2 + 1, gjFloat16, false},
  };
  for (const Row& r : rows) {
    INFO("count=" << r.count << " dtype=" << r.dtype);
    if (r.ok) {
      CHECK(v::bytes("c", "count", r.count, r.dtype) == r.count * gjDataTypeSize(r.dtype));
    } else {
      expect_invalid([&] { v::bytes("gjAllReduce", "count", r.count, r.dtype); },
                     "gjAllReduce: count=" + std::to_string(r.count) + " elements of");
    }
  }
}

TEST_CASE("validate: null buffers are errors only with elements", "[validate]") {
  int x = 0;
  CHECK_NOTHROW(v::buffer("c", "sendbuff", nullptr, 0));
  CHECK_NOTHROW(v::buffer("c", "sendbuff", &x, 5));
  expect_invalid([] { v::buffer("gjAllReduce", "recvbuff", nullptr, 3); }, "gjAllReduce: recvbuff=NULL with count=3");
  expect_invalid([] { v::out_pointer("gjCommRank", "rank", nullptr); }, "gjCommRank: rank=NULL");
}

TEST_CASE("validate: broadcast root", "[validate]") {
  CHECK_NOTHROW(v::root("c", 0, 1));
  CHECK_NOTHROW(v::root("c", 3, 4));
  expect_invalid([] { v::root("gjBroadcast", 4, 4); }, "gjBroadcast: root=4 is not a rank of this communicator (0..3)");
  expect_invalid([] { v::root("gjBroadcast", -1, 4); }, "root=-1");
}

TEST_CASE("validate: tensor lists", "[validate]") {
  float a[4], b[4];
  const void* sends[3] = {a, b, nullptr};
  void* recvs[3] = {a, b, nullptr};
  const std::size_t counts[3] = {4, 2, 0};
  CHECK(v::tensor_list("c", sends, recvs, counts, 3, gjFloat32) == 24);
  CHECK(v::tensor_list("c", nullptr, nullptr, nullptr, 0, gjFloat32) == 0);
  expect_invalid([&] { v::tensor_list("g", sends, recvs, counts, -1, gjFloat32); }, "g: ntensors=-1 is negative");
  expect_invalid([&] { v::tensor_list("g", sends, recvs, nullptr, 2, gjFloat32); }, "counts=NULL with ntensors=2");
  expect_invalid([&] { v::tensor_list("g", nullptr, recvs, counts, 2, gjFloat32); }, "sendbuffs=NULL");
  expect_invalid([&] { v::tensor_list("g", sends, nullptr, counts, 2, gjFloat32); }, "recvbuffs=NULL");
  const std::size_t hole[3] = {4, 2, 1};
  expect_invalid([&] { v::tensor_list("g", sends, recvs, hole, 3, gjFloat32); }, "sendbuffs[2]=NULL with counts[2]=1");
  const void* sends_ok[3] = {a, b, a};
  expect_invalid([&] { v::tensor_list("g", sends_ok, recvs, hole, 3, gjFloat32); }, "recvbuffs[2]=NULL with counts[2]=1");
  const std::size_t huge[3] = {4, SIZE_MAX, 0};
  expect_invalid([&] { v::tensor_list("g", sends, recvs, huge, 3, gjFloat32); }, "counts[1]=18446744073709551615");
  const std::size_t sum_overflow[2] = {static_cast<std::size_t>(PTRDIFF_MAX), 1};
  expect_invalid([&] { v::tensor_list("g", sends, recvs, sum_overflow, 2, gjUint8); }, "exceed PTRDIFF_MAX bytes (at counts[1])");
}
