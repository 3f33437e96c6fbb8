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
      {"all fit", {10, 20, 30}, 100, {{0, 3, 60}}},
      {"exactly the threshold", {40, 60}, 100, {{0, 2, 100}}},
      {"one byte over closes the group", {40, 61, 10}, 100, {{0, 1, 40}, {1, 2, 71}}},
      {"large tensor alone between small ones", {10, 500, 20, 30}, 100, {{0, 1, 10}, {1, 1, 500}, {2, 2, 50}}},
      {"threshold 0: one group per non-empty tensor", {4, 8, 0, 4}, 0, {{0, 1, 4}, {1, 1, 8}, {3, 1, 4}}},
      {"threshold smaller than every tensor", {4, 8}, 1, {{0, 1, 4}, {1, 1, 8}}},
      {"empty tensors ride along but start no group", {0, 0, 8, 0, 0}, 16, {{2, 3, 8}}},
      {"only empty tensors: no group", {0, 0}, 16, {}},
      {"many small ones split evenly", {25, 25, 25, 25, 25, 25}, 50, {{0, 2, 50}, {2, 2, 50}, {4, 2, 50}}},
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
      std::size_t sum = 0;
      for (int i = g.first; i < g.first + g.n; ++i) sum += bytes[static_cast<std::size_t>(i)];
      CHECK(sum == g.bytes);
      if (g.n > 1) CHECK(g.bytes <= threshold);
      next = g.first + g.n;
    }
    for (int skipped = next; skipped < 200; ++skipped) CHECK(bytes[static_cast<std::size_t>(skipped)] == 0);
  }
}
