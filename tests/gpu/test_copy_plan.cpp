// The fused copy's launch tables: which pieces go in which launch and where their chunks start.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "cuda/batched_copy.h"

using gj::cuda::CopyPiece;
using gj::cuda::kChunkBytes;
using gj::cuda::plan_copy_launches;

namespace {

// Distinct fake addresses: the plan never dereferences them.
const void* src(std::uintptr_t i) { return reinterpret_cast<const void*>(0x100000 + 16 * i); }
void* dst(std::uintptr_t i) { return reinterpret_cast<void*>(0x900000 + 16 * i); }

}  // namespace

TEST_CASE("plan_copy_launches: chunk offsets follow the pieces' sizes") {
  struct Row {
    std::vector<std::size_t> bytes;
    std::vector<std::uint64_t> first_chunk;
    std::uint64_t total_chunks;
  };
  const std::vector<Row> rows = {
      {{1}, {0}, 1},
      {{kChunkBytes}, {0}, 1},
      {{kChunkBytes + 1}, {0}, 2},
      {{1, kChunkBytes, kChunkBytes + 1, 3 * kChunkBytes}, {0, 1, 2, 4}, 7},
      {{5, 0, 7}, {0, 1}, 2},  // the empty piece is dropped
  };
  for (const Row& row : rows) {
    std::vector<CopyPiece> pieces;
    for (std::size_t i = 0; i < row.bytes.size(); ++i) pieces.push_back({src(i), dst(i), row.bytes[i]});
    const auto launches = plan_copy_launches(pieces.data(), pieces.size(), 1000);
    REQUIRE(launches.size() == 1);
    REQUIRE(launches[0].total_chunks == row.total_chunks);
    REQUIRE(launches[0].entries.size() == row.first_chunk.size());
    for (std::size_t i = 0; i < row.first_chunk.size(); ++i) {
      CHECK(launches[0].entries[i].first_chunk == row.first_chunk[i]);
    }
  }
}

TEST_CASE("plan_copy_launches: nothing to copy means no launch") {
  CHECK(plan_copy_launches(nullptr, 0, 1000).empty());
  const std::vector<CopyPiece> idle = {{src(1), dst(1), 0}, {src(2), const_cast<void*>(src(2)), 64}};
  CHECK(plan_copy_launches(idle.data(), idle.size(), 1000).empty());  // empty + identity copy
}

TEST_CASE("plan_copy_launches: more pieces than a table holds take several launches") {
  const int capacity = GENERATE(1, 96, 1000);
  const std::size_t n = GENERATE(std::size_t{1}, std::size_t{95}, std::size_t{97}, std::size_t{2500});
  std::vector<CopyPiece> pieces;
  for (std::size_t i = 0; i < n; ++i) pieces.push_back({src(i), dst(i), 1 + i % 3});
  const auto launches = plan_copy_launches(pieces.data(), n, capacity);
  const std::size_t cap = static_cast<std::size_t>(capacity);
  REQUIRE(launches.size() == (n + cap - 1) / cap);
  std::size_t seen = 0;
  for (const auto& l : launches) {
    REQUIRE(l.entries.size() == std::min(cap, n - seen));
    CHECK(l.entries.front().first_chunk == 0);  // chunk numbering restarts per launch
    CHECK(l.total_chunks == l.entries.size());  // every piece is below one chunk
    for (const auto& e : l.entries) {
      CHECK(e.src == pieces[seen].src);
      CHECK(e.dst == pieces[seen].dst);
      CHECK(e.bytes == pieces[seen].bytes);
      ++seen;
    }
  }
  CHECK(seen == n);
}
