// Grid sizes of the element-wise and copy kernels: blocks from the work, capped at what the
// GPU holds resident.
#include <catch2/catch.hpp>

#include "cuda/launch_config.h"

using gj::cuda::plan_blocks;

TEST_CASE("plan_blocks: never more blocks than wanted, never more than resident, at least one") {
  // 132 SMs (H100/H200), 256 threads: 8 resident blocks per SM.
  CHECK(plan_blocks(0, 256, 132) == 1);
  CHECK(plan_blocks(1, 256, 132) == 1);
  CHECK(plan_blocks(1000, 256, 132) == 1000);
  CHECK(plan_blocks(1056, 256, 132) == 1056);
  CHECK(plan_blocks(1057, 256, 132) == 1056);
  CHECK(plan_blocks(std::uint64_t{1} << 40, 256, 132) == 1056);
  CHECK(plan_blocks(100, 1024, 2) == 4);  // 2 resident blocks of 1024 threads per SM
  CHECK(plan_blocks(100, 4096, 2) == 2);  // more threads than an SM holds: one per SM
}
