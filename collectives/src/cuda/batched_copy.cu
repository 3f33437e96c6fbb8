// The fused copy kernel. Each block takes chunks of the launch (grid-stride), finds the chunk's
// entry by binary search in the parameter table and copies it with the widest access that the
// entry's src and dst alignment allow (16-byte vectors for cudaMalloc'ed tensors; narrower for
// the odd offsets that packing f16 tensors of odd length produces), four loads in flight.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "batched_copy.h"
#include "batched_copy_ops.h"
#include "check.h"
#include "launch_config.h"

namespace gj::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

template <int Capacity>
struct CopyTable {
  int n;
  unsigned long long total_chunks;
  CopyEntry e[Capacity];
};
static_assert(sizeof(CopyTable<kSmallTableCapacity>) < 4096, "classic 4 KB parameter limit");
static_assert(sizeof(CopyTable<kLargeTableCapacity>) <= 32764, "CUDA 12.1 parameter limit");

template <typename V>
__device__ void copy_range(const char* __restrict__ src, char* __restrict__ dst, std::size_t begin,
                           std::size_t end) {
  const std::size_t nv = (end - begin) / sizeof(V);
  const V* s = reinterpret_cast<const V*>(src + begin);
  V* d = reinterpret_cast<V*>(dst + begin);
  std::size_t i = threadIdx.x;
  for (; i + (kUnroll - 1) * kThreads < nv; i += kUnroll * kThreads) {
    V r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = s[i + u * kThreads];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) d[i + u * kThreads] = r[u];
  }
  for (; i < nv; i += kThreads) d[i] = s[i];
  for (std::size_t b = begin + nv * sizeof(V) + threadIdx.x; b < end; b += kThreads) dst[b] = src[b];
}

template <int Capacity>
__global__ void __launch_bounds__(kThreads) batched_copy_kernel(const __grid_constant__ CopyTable<Capacity> t) {
  for (unsigned long long c = blockIdx.x; c < t.total_chunks; c += gridDim.x) {
    const ChunkRange r = locate_chunk(t.e, t.n, c);
    const CopyEntry& e = t.e[r.entry];
    const std::size_t begin = r.begin;
    const std::size_t end = r.end;
    const auto* s = static_cast<const char*>(e.src);
    auto* d = static_cast<char*>(e.dst);
    // Chunk starts are multiples of 16, so the entry's alignment holds for every chunk.
    const auto align = reinterpret_cast<std::uintptr_t>(s) | reinterpret_cast<std::uintptr_t>(d);
    if (align % 16 == 0) copy_range<uint4>(s, d, begin, end);
    else if (align % 8 == 0) copy_range<uint2>(s, d, begin, end);
    else if (align % 4 == 0) copy_range<unsigned>(s, d, begin, end);
    else if (align % 2 == 0) copy_range<unsigned short>(s, d, begin, end);
    else copy_range<unsigned char>(s, d, begin, end);
  }
}

template <int Capacity>
void launch(const CopyLaunch& l, cudaStream_t stream) {
  CopyTable<Capacity> t;
  t.n = static_cast<int>(l.entries.size());
  t.total_chunks = l.total_chunks;
  std::copy(l.entries.begin(), l.entries.end(), t.e);
  const unsigned blocks = blocks_for_blocks(l.total_chunks, kThreads);  // one chunk per block
  batched_copy_kernel<Capacity><<<blocks, kThreads, 0, stream>>>(t);
  check(cudaGetLastError(), "batched_copy<<<" + std::to_string(blocks) + ">>>(pieces=" +
                                std::to_string(t.n) + ", chunks=" + std::to_string(l.total_chunks) + ")");
}

}  // namespace

void batched_copy(const CopyPiece* pieces, std::size_t n, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  for (const CopyLaunch& l : plan_copy_launches(pieces, n, kLargeTableCapacity)) {
    if (l.entries.size() <= static_cast<std::size_t>(kSmallTableCapacity)) {
      launch<kSmallTableCapacity>(l, s);
    } else {
      launch<kLargeTableCapacity>(l, s);
    }
  }
}

}  // namespace gj::cuda
