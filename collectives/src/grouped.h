// Grouped allreduce, independent of the backend: tensors are packed in order into the
// backend's fusion buffer up to the threshold, reduced with one collective per fused group,
// and unpacked. Every element is reduced exactly as a per-tensor call would reduce it.
#pragma once

#include <cstddef>
#include <vector>

#include "backend.h"

namespace gj {

// Tensors [first, first + n) reduced by one collective of `bytes` bytes (their fused length).
struct FusionGroup {
  int first = 0;
  int n = 0;
  std::size_t bytes = 0;
  bool operator==(const FusionGroup& o) const { return first == o.first && n == o.n && bytes == o.bytes; }
};

// Every non-empty fused tensor starts at a multiple of this in the fusion buffer (as aligned as
// the buffer itself): f16/bf16 tensors of odd length would otherwise put later tensors at 2-byte
// offsets, off the vector loads of the device kernels. 16 is a multiple of every element size,
// so a group's length stays a whole number of elements. The gaps are not reduced into results.
inline constexpr std::size_t kFusionAlign = 16;

// Pure. Where a tensor of `bytes` bytes starts in a fused buffer whose contents end at `end`:
// the next kFusionAlign boundary; an empty tensor occupies nothing and starts at end.
std::size_t fused_offset(std::size_t end, std::size_t bytes);

// Pure. The offsets of tensors [g.first, g.first + g.n) in g's fused buffer (fused_offset in
// order); g.bytes is where the last one ends.
std::vector<std::size_t> fusion_offsets(const std::size_t* bytes, const FusionGroup& g);

// Pure. A group closes when the next tensor would push its fused length (padding included)
// past threshold; a tensor larger than threshold (every non-empty tensor when threshold is 0)
// forms a group of its own. Empty tensors are inside a group only when they follow a non-empty
// one in it. FusionGroup::bytes is the fused length.
std::vector<FusionGroup> plan_fusion(const std::size_t* bytes, int ntensors, std::size_t threshold);

// Arguments already validated. One backend.allreduce_scaled per group holding bytes, unless the
// backend reduces the tensors unfused (Backend::allreduce_unfused).
void grouped_allreduce(Backend& backend, const void* const* sendbuffs, void* const* recvbuffs,
                       const std::size_t* counts, int ntensors, gjDataType_t dtype, gjRedOp_t op, Scale scale,
                       std::size_t threshold, void* stream);

}  // namespace gj
