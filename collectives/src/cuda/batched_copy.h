// Fused copy of many device buffers in one kernel launch: the fusion buffer's pack and unpack.
//
// The launch table (src, dst, bytes, first chunk) travels as the kernel's parameter block, which
// the GPU keeps in constant memory: no host->device copy, no staging buffer whose reuse would have
// to be fenced. A table holds up to kLargeTableCapacity pieces (32 KB of parameters, CUDA >= 12.1
// on Volta or newer); more pieces take one launch per table. Pieces are cut into chunks of
// kChunkBytes so that one large tensor among many small ones still spreads over every SM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gj::cuda {

struct CopyPiece {
  const void* src;
  void* dst;
  std::size_t bytes;
};

inline constexpr std::size_t kChunkBytes = std::size_t{64} << 10;
inline constexpr int kSmallTableCapacity = 96;    // parameter block < 4 KB: fastest launch
inline constexpr int kLargeTableCapacity = 1000;  // parameter block < 32 KB

struct CopyEntry {
  const void* src;
  void* dst;
  std::uint64_t bytes;
  std::uint64_t first_chunk;  // chunks of earlier entries in the same launch
};

// One launch: entries[0..n), chunk count total_chunks.
struct CopyLaunch {
  std::vector<CopyEntry> entries;
  std::uint64_t total_chunks = 0;
};

// Pure: splits pieces into launches of at most capacity entries, dropping empty pieces and
// pieces whose src == dst.
std::vector<CopyLaunch> plan_copy_launches(const CopyPiece* pieces, std::size_t n, int capacity);

// Stream-ordered (stream is a cudaStream_t; nullptr = default stream). Pieces must not overlap.
// Throws gj::Error(gjCudaError) naming the launch when the runtime reports an error.
void batched_copy(const CopyPiece* pieces, std::size_t n, void* stream);

// The Backend's fusion pack/unpack: piece i is bytes[i] long at offsets[i] in the fused buffer
// (the gaps between pieces are left as they are: their reduced values are never read).
void pack(void* dst, const void* const* srcs, const std::size_t* bytes, const std::size_t* offsets, int n,
          void* stream);
void unpack(void* const* dsts, const void* src, const std::size_t* bytes, const std::size_t* offsets, int n,
            void* stream);
// The same with the pieces back to back: piece i at sum(bytes[0..i)).
void pack(void* dst, const void* const* srcs, const std::size_t* bytes, int n, void* stream);
void unpack(void* const* dsts, const void* src, const std::size_t* bytes, int n, void* stream);

}  // namespace gj::cuda
