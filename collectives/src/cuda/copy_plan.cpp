// Host side of the fused copy: the launch tables (pure) and pack/unpack's piece lists.
#include "batched_copy.h"

namespace gj::cuda {

std::vector<CopyLaunch> plan_copy_launches(const CopyPiece* pieces, std::size_t n, int capacity) {
  std::vector<CopyLaunch> launches;
  for (std::size_t i = 0; i < n; ++i) {
    // Empty and identity copies move nothing.
    if (pieces[i].bytes == 0 || pieces[i].src == pieces[i].dst) continue;
    if (launches.empty() || launches.back().entries.size() == static_cast<std::size_t>(capacity)) {
      launches.emplace_back();
    }
    CopyLaunch& l = launches.back();
    const std::uint64_t chunks = (pieces[i].bytes + kChunkBytes - 1) / kChunkBytes;
    l.entries.push_back(CopyEntry{pieces[i].src, pieces[i].dst, pieces[i].bytes, l.total_chunks});
    l.total_chunks += chunks;
  }
  return launches;
}

void pack(void* dst, const void* const* srcs, const std::size_t* bytes, const std::size_t* offsets, int n,
          void* stream) {
  std::vector<CopyPiece> pieces(static_cast<std::size_t>(n));
  auto* out = static_cast<char*>(dst);
  for (int i = 0; i < n; ++i) pieces[static_cast<std::size_t>(i)] = CopyPiece{srcs[i], out + offsets[i], bytes[i]};
  batched_copy(pieces.data(), pieces.size(), stream);
}

void unpack(void* const* dsts, const void* src, const std::size_t* bytes, const std::size_t* offsets, int n,
            void* stream) {
  std::vector<CopyPiece> pieces(static_cast<std::size_t>(n));
  const auto* in = static_cast<const char*>(src);
  for (int i = 0; i < n; ++i) pieces[static_cast<std::size_t>(i)] = CopyPiece{in + offsets[i], dsts[i], bytes[i]};
  batched_copy(pieces.data(), pieces.size(), stream);
}

namespace {
std::vector<std::size_t> back_to_back(const std::size_t* bytes, int n) {
  std::vector<std::size_t> offsets(static_cast<std::size_t>(n));
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) {
    offsets[static_cast<std::size_t>(i)] = at;
    at += bytes[i];
  }
  return offsets;
}
}  // namespace

void pack(void* dst, const void* const* srcs, const std::size_t* bytes, int n, void* stream) {
  pack(dst, srcs, bytes, back_to_back(bytes, n).data(), n, stream);
}

void unpack(void* const* dsts, const void* src, const std::size_t* bytes, int n, void* stream) {
  unpack(dsts, src, bytes, back_to_back(bytes, n).data(), n, stream);
}

}  // namespace gj::cuda
