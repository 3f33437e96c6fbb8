// Grid sizing for the memory-bound kernels: enough blocks to fill every SM several times over,
// never more blocks than there is work (the kernels are grid-stride loops).
#pragma once

#include <cstdint>

namespace gj::cuda {

// Pure: blocks_wanted clamped to [1, sm_count * resident blocks per SM] (2048 resident threads
// per SM on Ampere and Hopper).
unsigned plan_blocks(std::uint64_t blocks_wanted, int threads_per_block, int sm_count);

// Work of `items` independent items, one thread each: ceil(items / threads_per_block) blocks
// at most, on the current device.
unsigned blocks_for_items(std::uint64_t items, int threads_per_block);
// Work already cut into per-block pieces (the fused copy's chunks), on the current device.
unsigned blocks_for_blocks(std::uint64_t blocks, int threads_per_block);

}  // namespace gj::cuda
