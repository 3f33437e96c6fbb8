#include <catch2/catch.hpp>

#include <vector>

#include "grouped.h"

using gj::FusionGroup;
using Bytes = std::vector<std::size_t>;
using Groups = std::vector<FusionGroup>;

namespace Catch {
template <>
struct StringMaker<FusionGroup> {
  static std::string convert(const FusionGroup& g) {
    return "{" + std::to_string(g.first) + "," + std::to_string(g.n) + "," + std::to_string(g.bytes) + "}";
  }
};
}  // namespace Catch

TEST_CASE("plan_fusion: tensors in order, up to the threshold, large ones alone", "[fusion]") {
  struct Row {
    const char* what;
    Bytes bytes;
    std::size_t threshold;
    Groups want;
  };
  const Row rows[] = {
      {"empty", {}, 100, {}},
      {"all fit, each start padded to 16 bytes", {10, 20, 30}, 100, {{0, 3, 78}}},
      {"exactly the threshold", {48, 52}, 100, {{0, 2, 100}}},
      {"one byte over closes the group", {48, 53, 10}, 100, {{0, 1, 48}, {1, 2, 74}}},
      {"padding counts against the threshold", {2, 2}, 17, {{0, 1, 2}, {1, 1, 2}}},
      {"padding exactly at the threshold", {2, 2}, 18, {{0, 2, 18}}},
      {"large tensor alone between small ones", {10, 500, 20, 30}, 100, {{0, 1, 10}, {1, 1, 500}, {2, 2, 62}}},
      {"threshold 0: one group per non-empty tensor", {4, 8, 0, 4}, 0, {{0, 1, 4}, {1, 1, 8}, {3, 1, 4}}},
      {"threshold smaller than every tensor", {4, 8}, 1, {{0, 1, 4}, {1, 1, 8}}},
      {"empty tensors ride along but start no group", {0, 0, 8, 0, 0}, 16, {{2, 3, 8}}},
      {"only empty tensors: no group", {0, 0}, 16, {}},
      {"many small ones split evenly", {16, 16, 16, 16, 16, 16}, 32, {{0, 2, 32}, {2, 2, 32}, {4, 2, 32}}},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    CHECK(gj::plan_fusion(r.bytes.data(), static_cast<int>(r.bytes.size()), r.threshold) == r.want);
  }
}

TEST_CASE("plan_fusion: every non-empty tensor in exactly one group, in order, none over threshold unless alone",
          "[fusion]") {
  for (std::size_t threshold : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{64}, std::size_t{1000}}) {
    Bytes bytes;
    for (std::size_t i = 0; i < 200; ++i) bytes.push_back((i * 37) % 97);
    const Groups groups = gj::plan_fusion(bytes.data(), static_cast<int>(bytes.size()), threshold);
    int next = 0;
    for (const FusionGroup& g : groups) {
      for (int skipped = next; skipped < g.first; ++skipped) CHECK(bytes[static_cast<std::size_t>(skipped)] == 0);
      CHECK(g.first >= next);
      CHECK(g.n >= 1);
      // Pieces at 16-byte boundaries, in order, not overlapping, the group ending with the last.
      const std::vector<std::size_t> offsets = gj::fusion_offsets(bytes.data(), g);
      REQUIRE(offsets.size() == static_cast<std::size_t>(g.n));
      std::size_t end = 0;
      for (int k = 0; k < g.n; ++k) {
        const std::size_t b = bytes[static_cast<std::size_t>(g.first + k)];
        CHECK(offsets[static_cast<std::size_t>(k)] >= end);
        if (b > 0) CHECK(offsets[static_cast<std::size_t>(k)] % gj::kFusionAlign == 0);
        end = offsets[static_cast<std::size_t>(k)] + b;
      }
      CHECK(end == g.bytes);
      if (g.n > 1) CHECK(g.bytes <= threshold);
      next = g.first + g.n;
    }
    for (int skipped = next; skipped < 200; ++skipped) CHECK(bytes[static_cast<std::size_t>(skipped)] == 0);
  }
}

TEST_CASE("fusion_offsets: f16 tensors of odd length keep later tensors 16-byte aligned", "[fusion]") {
  // 3, 2, 1 and 5 f16 elements.
  const Bytes bytes = {6, 4, 2, 10};
  const Groups groups = gj::plan_fusion(bytes.data(), 4, 1000);
  REQUIRE(groups == Groups{{0, 4, 58}});
  CHECK(gj::fusion_offsets(bytes.data(), groups[0]) == Bytes{0, 16, 32, 48});
  CHECK(groups[0].bytes % 2 == 0);  // a whole number of f16 elements for the collective
}

TEST_CASE("fusion_offsets: empty tensors take no room, aligned ones no padding", "[fusion]") {
  const Bytes bytes = {8, 0, 0, 32, 16, 0, 3};
  const Groups groups = gj::plan_fusion(bytes.data(), 7, 1000);
  REQUIRE(groups == Groups{{0, 7, 67}});
  CHECK(gj::fusion_offsets(bytes.data(), groups[0]) == Bytes{0, 8, 8, 16, 48, 64, 64});
}

TEST_CASE("fused_offset: the next 16-byte boundary for a non-empty tensor", "[fusion]") {
  CHECK(gj::fused_offset(0, 1) == 0);
  CHECK(gj::fused_offset(1, 1) == 16);
  CHECK(gj::fused_offset(16, 4) == 16);
  CHECK(gj::fused_offset(17, 4) == 32);
  CHECK(gj::fused_offset(17, 0) == 17);
}
