// Grouped allreduce, independent of the backend: tensors are packed in order into the
// backend's fusion buffer up to the threshold, reduced with one collective per fused group,
// and unpacked. Every element is reduced exactly as a per-tensor call would reduce it.
#pragma once

#include <cstddef>
#include <vector>

#include "backend.h"

namespace gj {

// Tensors [first, first + n) reduced by one collective of `bytes` bytes.
struct FusionGroup {
  int first = 0;
  int n = 0;
  std::size_t bytes = 0;
  bool operator==(const FusionGroup& o) const { return first == o.first && n == o.n && bytes == o.bytes; }
};

// Pure. A group closes when the next tensor would push it past threshold; a tensor larger
// than threshold (every non-empty tensor when threshold is 0) forms a group of its own.
// Empty tensors are inside a group only when they follow a non-empty one in it.
std::vector<FusionGroup> plan_fusion(const std::size_t* bytes, int ntensors, std::size_t threshold);

// Arguments already validated. One backend.allreduce_scaled per group holding bytes, unless the
// backend reduces the tensors unfused (Backend::allreduce_unfused).
void grouped_allreduce(Backend& backend, const void* const* sendbuffs, void* const* recvbuffs,
                       const std::size_t* counts, int ntensors, gjDataType_t dtype, gjRedOp_t op, Scale scale,
                       std::size_t threshold, void* stream);

}  // namespace gj
