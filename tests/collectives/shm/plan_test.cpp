#include <catch2/catch.hpp>

#include <vector>

#include "shm/plan.h"

using gj::shm::Range;

TEST_CASE("slices of a chunk tile it exactly, on 64-byte lines", "[shm][plan]") {
  for (std::size_t es : {1, 2, 4, 8}) {
    for (int p : {1, 2, 3, 4, 7}) {
      for (std::size_t m : {0, 1, 5, 63, 64, 65, 1000, 4096, 4097, 262144}) {
        CAPTURE(es, p, m);
        std::size_t next = 0;
        for (int q = 0; q < p; ++q) {
          const Range r = gj::shm::slice_of(m, p, q, es);
          CHECK(r.begin == next);
          CHECK(r.end >= r.begin);
          if (r.size() > 0) CHECK((r.begin * es) % 64 == 0);
          next = r.end;
        }
        CHECK(next == m);
      }
    }
  }
}

TEST_CASE("chunk element counts are whole lines and fit the chunk", "[shm][plan]") {
  struct Row {
    std::size_t bytes, es, want;
  };
  const Row rows[] = {{1 << 20, 4, 262144}, {1 << 20, 2, 524288}, {100, 8, 8}, {10, 4, 16}, {65600, 4, 16400}};
  for (const Row& r : rows) {
    CAPTURE(r.bytes, r.es);
    CHECK(gj::shm::chunk_elems(r.bytes, r.es) == r.want);
  }
}

TEST_CASE("stage numbers order the three steps of consecutive chunks", "[shm][plan]") {
  for (std::uint64_t g = 0; g < 5; ++g) {
    CHECK(gj::shm::published(g) < gj::shm::reduced(g));
    CHECK(gj::shm::reduced(g) < gj::shm::done(g));
    CHECK(gj::shm::done(g) < gj::shm::published(g + 1));
  }
}

TEST_CASE("a broadcast of a few chunks goes in about four whole-page pieces, larger ones in chunks", "[shm][plan]") {
  struct Row {
    std::size_t bytes, chunk, want;
  };
  const Row rows[] = {
      {0, 1 << 20, 16384},              // the signal: one step of nothing
      {100, 1 << 20, 16384},            // below four minimum pieces: one piece
      {65536, 1 << 20, 16384},          // four pieces
      {65537, 1 << 20, 20480},          // a quarter rounded up to whole pages
      {1 << 20, 1 << 20, 262144},       // one chunk: four pieces, two in flight
      {4 << 20, 1 << 20, 1 << 20},      // a quarter is a chunk
      {64 << 20, 1 << 20, 1 << 20},     // never more than a chunk (the slot's size)
      {65536, 8192, 8192},              // a small engine's chunk caps even the minimum
  };
  for (const Row& r : rows) {
    CAPTURE(r.bytes, r.chunk);
    CHECK(gj::shm::broadcast_piece(r.bytes, r.chunk) == r.want);
  }
}
