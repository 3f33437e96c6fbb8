// The spare-event pool of device requests (nccl/handle_pool.h): events are reused, never two
// live requests share one, and a full pool hands the surplus back to be destroyed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include "nccl/handle_pool.h"

using gj::nccl::HandlePool;

namespace {

// Stands in for cudaEventCreate: a new id per call.
struct Factory {
  int next = 1;
  int make() { return next++; }
};

int acquire(HandlePool<int>& pool, Factory& f) {
  int h = 0;
  if (pool.take(&h)) return h;
  pool.created();
  return f.make();
}

}  // namespace

TEST_CASE("handle pool: an empty pool makes the caller create", "[handle_pool]") {
  HandlePool<int> pool(4);
  int h = -1;
  CHECK_FALSE(pool.take(&h));
  CHECK(h == -1);
  CHECK(pool.live() == 0);
}

TEST_CASE("handle pool: handles given back are reused, none created twice", "[handle_pool]") {
  HandlePool<int> pool(8);
  Factory f;
  std::vector<int> first;
  for (int i = 0; i < 5; ++i) first.push_back(acquire(pool, f));
  CHECK(pool.live() == 5);
  for (int h : first) CHECK(pool.give_back(h));
  CHECK(pool.live() == 0);
  CHECK(pool.spare() == 5);
  std::vector<int> second;
  for (int i = 0; i < 5; ++i) second.push_back(acquire(pool, f));
  CHECK(f.next == 6);  // nothing new was created
  std::sort(first.begin(), first.end());
  std::sort(second.begin(), second.end());
  CHECK(first == second);
}

TEST_CASE("handle pool: live handles are distinct with many in flight", "[handle_pool]") {
  HandlePool<int> pool(16);
  Factory f;
  std::vector<int> live;
  // Interleaved issue and completion, as requests completed out of order by gjTest.
  for (int step = 0; step < 200; ++step) {
    live.push_back(acquire(pool, f));
    if (step % 3 == 2) {
      CHECK(pool.give_back(live[live.size() / 2]));
      live.erase(live.begin() + static_cast<long>(live.size() / 2));
    }
    const std::set<int> distinct(live.begin(), live.end());
    REQUIRE(distinct.size() == live.size());
    REQUIRE(pool.live() == live.size());
  }
}

TEST_CASE("handle pool: beyond max_spare the caller destroys, drain returns the rest", "[handle_pool]") {
  HandlePool<int> pool(2);
  Factory f;
  const int a = acquire(pool, f), b = acquire(pool, f), c = acquire(pool, f);
  CHECK(pool.give_back(a));
  CHECK(pool.give_back(b));
  CHECK_FALSE(pool.give_back(c));  // full: c is the caller's to destroy
  CHECK(pool.live() == 0);
  std::vector<int> rest = pool.drain();
  std::sort(rest.begin(), rest.end());
  CHECK(rest == std::vector<int>{a, b});
  CHECK(pool.spare() == 0);
  int h = 0;
  CHECK_FALSE(pool.take(&h));
}
