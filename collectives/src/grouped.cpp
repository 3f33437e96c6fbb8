#include "grouped.h"

#include <algorithm>

#include "dtype.h"

namespace gj {
namespace {

// The index of the group's only non-empty tensor, or -1 when it has several.
int sole_nonempty(const std::vector<std::size_t>& bytes, const FusionGroup& g) {
  int found = -1;
  for (int i = g.first; i < g.first + g.n; ++i) {
    if (bytes[static_cast<std::size_t>(i)] == 0) continue;
    if (found >= 0) return -1;
    found = i;
  }
  return found;
}

// Whether a tensor of `bytes` bytes still fits a group whose fused contents end at `end`.
bool fits(std::size_t end, std::size_t bytes, std::size_t threshold) {
  if (bytes == 0) return true;
  const std::size_t at = fused_offset(end, bytes);
  return threshold > 0 && at <= threshold && bytes <= threshold - at;
}

}  // namespace

std::size_t fused_offset(std::size_t end, std::size_t bytes) {
  if (bytes == 0) return end;
  return (end + kFusionAlign - 1) / kFusionAlign * kFusionAlign;
}

std::vector<std::size_t> fusion_offsets(const std::size_t* bytes, const FusionGroup& g) {
  std::vector<std::size_t> offsets;
  std::size_t end = 0;
  for (int i = g.first; i < g.first + g.n; ++i) {
    offsets.push_back(fused_offset(end, bytes[i]));
    end = offsets.back() + bytes[i];
  }
  return offsets;
}

std::vector<FusionGroup> plan_fusion(const std::size_t* bytes, int ntensors, std::size_t threshold) {
  std::vector<FusionGroup> groups;
  FusionGroup open;
  for (int i = 0; i < ntensors; ++i) {
    // Empty tensors need no collective: they ride along in an open group, never start one.
    if (bytes[i] == 0 && open.n == 0) continue;
    if (open.n > 0 && !fits(open.bytes, bytes[i], threshold)) {
      groups.push_back(open);
      open = FusionGroup{i, 0, 0};
    }
    if (open.n == 0) open.first = i;
    ++open.n;
    open.bytes = fused_offset(open.bytes, bytes[i]) + bytes[i];
    if (bytes[i] > threshold) {  // alone: close it right away
      groups.push_back(open);
      open = FusionGroup{i + 1, 0, 0};
    }
  }
  if (open.n > 0) groups.push_back(open);
  return groups;
}

void grouped_allreduce(Backend& backend, const void* const* sendbuffs, void* const* recvbuffs,
                       const std::size_t* counts, int ntensors, gjDataType_t dtype, gjRedOp_t op, Scale scale,
                       std::size_t threshold, void* stream) {
  if (backend.allreduce_unfused(sendbuffs, recvbuffs, counts, ntensors, dtype, op, scale, stream)) return;
  const std::size_t elem = dtype_size(dtype);
  std::vector<std::size_t> bytes(static_cast<std::size_t>(ntensors));
  for (int i = 0; i < ntensors; ++i) bytes[static_cast<std::size_t>(i)] = counts[i] * elem;
  const std::vector<FusionGroup> groups = plan_fusion(bytes.data(), ntensors, threshold);

  std::size_t largest_fused = 0;
  for (const FusionGroup& g : groups) {
    if (sole_nonempty(bytes, g) < 0) largest_fused = std::max(largest_fused, g.bytes);
  }
  void* fusion = largest_fused > 0 ? backend.fusion_buffer(largest_fused, stream) : nullptr;

  for (const FusionGroup& g : groups) {
    if (g.bytes == 0) continue;
    const int only = sole_nonempty(bytes, g);
    if (only >= 0) {  // nothing to fuse: reduce the tensor where it is
      backend.allreduce_scaled(sendbuffs[only], recvbuffs[only], counts[only], dtype, op, scale, stream);
      continue;
    }
    const std::vector<std::size_t> offsets = fusion_offsets(bytes.data(), g);
    backend.pack(fusion, sendbuffs + g.first, bytes.data() + g.first, offsets.data(), g.n, stream);
    backend.allreduce_scaled(fusion, fusion, g.bytes / elem, dtype, op, scale, stream);
    backend.unpack(recvbuffs + g.first, fusion, bytes.data() + g.first, offsets.data(), g.n, stream);
  }
}

}  // namespace gj
