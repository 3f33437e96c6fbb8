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
