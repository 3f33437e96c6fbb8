// Pure planning for the shared-memory allreduce: how a message is cut into pipeline chunks,
// how a chunk is cut into per-rank slices, and the stage numbers ranks publish. No I/O.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gj::shm {

// Slices start on 64-byte boundaries so no two ranks write one cache line.
constexpr std::size_t kSliceAlignBytes = 64;

struct Range {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
};

// Elements per pipeline chunk: as many as fit in chunk_bytes, at least one 64-byte line.
inline std::size_t chunk_elems(std::size_t chunk_bytes, std::size_t elem_size) {
  const std::size_t line = kSliceAlignBytes / elem_size;
  const std::size_t n = chunk_bytes / elem_size / line * line;
  return n < line ? line : n;
}

// Rank q's slice of a chunk of m elements among p ranks: equal slices rounded up to whole
// 64-byte lines; trailing ranks may get a short or empty slice.
inline Range slice_of(std::size_t m, int p, int q, std::size_t elem_size) {
  const std::size_t line = kSliceAlignBytes / elem_size;
  const std::size_t per = (m + static_cast<std::size_t>(p) - 1) / static_cast<std::size_t>(p);
  const std::size_t per_aligned = (per + line - 1) / line * line;
  const std::size_t b = per_aligned * static_cast<std::size_t>(q);
  const std::size_t e = b + per_aligned;
  return Range{b < m ? b : m, e < m ? e : m};
}

// Stage numbers: each rank publishes a monotonically increasing stage; for the g-th chunk
// since the engine was created (the same g on every rank):
//   published(g): its input for chunk g is in its slot (g % 2),
//   reduced(g):   its slice of chunk g is reduced, in its slot,
//   done(g):      it has read everything it needs from the peers' slots for chunk g,
// and a rank may overwrite slot (g % 2) for chunk g only once every peer is done(g - 2).
inline std::uint64_t published(std::uint64_t g) { return 3 * g + 1; }
inline std::uint64_t reduced(std::uint64_t g) { return 3 * g + 2; }
inline std::uint64_t done(std::uint64_t g) { return 3 * g + 3; }
constexpr int kSlots = 2;

// A message of at most this many bytes is reduced whole by every rank (one synchronization)
// instead of reduce-scatter + allgather (two): cheaper while reading p copies costs less
// than one more round trip between cores.
constexpr std::size_t kWholeReduceMaxBytes = 32 * 1024;

// Bytes per pipeline step of a broadcast: whole chunks, but a message of a few chunks or less
// goes in about four pieces (whole 4 KiB pages, at least kMinBroadcastPiece), so that root's
// copy of piece k + 1 into its other slot overlaps the peers' copy of piece k out of the first
// instead of the two copies of one chunk running one after the other.
constexpr std::size_t kMinBroadcastPiece = 16 * 1024;
inline std::size_t broadcast_piece(std::size_t bytes, std::size_t chunk_bytes) {
  const std::size_t quarter = ((bytes + 3) / 4 + 4095) / 4096 * 4096;
  const std::size_t piece = quarter < kMinBroadcastPiece ? kMinBroadcastPiece : quarter;
  return piece < chunk_bytes ? piece : chunk_bytes;
}

}  // namespace gj::shm
