// Host reduction kernels shared by the MPI user-defined ops and the shared-memory path.
// f16/bf16 accumulate in f32 and round to nearest even; gjAvg is NOT handled here (callers
// pre-scale: see the header's divide-then-sum rule), reduce_into treats gjAvg as gjSum.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gj/collectives.h"

namespace gj::host {

// acc[i] = op(acc[i], in[i]) for i < count.
void reduce_into(void* acc, const void* in, std::size_t count, gjDataType_t dtype, gjRedOp_t op);

// out[i] = in[i] * scale (floating types only; f16/bf16 via f32 with round-to-nearest-even).
void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double scale);

// Conversions, exposed for tests and the device kernels' reference results.
float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);
float bf16_to_f32(std::uint16_t b);
std::uint16_t f32_to_bf16(float f);

}  // namespace gj::host
