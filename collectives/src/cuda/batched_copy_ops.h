// The element logic of the fused copy (batched_copy.h): which entry of a launch table a chunk
// belongs to and which bytes of it the chunk covers. Callable on the device (batched_copy.cu's
// kernel) and on the host (the emulated device runtime: docs/gpu.md, "Emulation").
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "batched_copy.h"

namespace gj::cuda {

// The bytes [begin, end) of entry `entry` that chunk c of a launch copies.
struct ChunkRange {
  int entry;
  std::size_t begin;
  std::size_t end;
};

// entries[0..n) ordered by first_chunk (plan_copy_launches), c < the launch's total_chunks.
__host__ __device__ inline ChunkRange locate_chunk(const CopyEntry* entries, int n, unsigned long long c) {
  int lo = 0, hi = n - 1;  // last entry with first_chunk <= c
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (entries[mid].first_chunk <= c) lo = mid; else hi = mid - 1;
  }
  const CopyEntry& e = entries[lo];
  const std::size_t begin = (c - e.first_chunk) * kChunkBytes;
  const std::size_t end = begin + kChunkBytes < e.bytes ? begin + kChunkBytes : e.bytes;
  return ChunkRange{lo, begin, end};
}

}  // namespace gj::cuda
