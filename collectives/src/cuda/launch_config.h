// Grid sizing for the memory-bound kernels: enough blocks to fill every SM several times over,
// never more blocks than there is work (the kernels are grid-stride loops).
#pragma once

#include <cstdint>

namespace gj::cuda {

// Blocks for work_items independent items of threads_per_block threads each, on the current device.
unsigned grid_size(std::uint64_t work_items, int threads_per_block);

}  // namespace gj::cuda
