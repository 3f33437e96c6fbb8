// The two halves of gjAvg around an MPI sum, as the public header defines them:
// floating types divide each contribution before the sum, integers divide the exact sum.
#pragma once

#include <cstddef>

#include "gj/collectives.h"

namespace gj {

// out[i] = in[i] / ranks for floating dtypes (f16/bf16 through f32, round to nearest even).
void scale_contribution(void* out, const void* in, std::size_t count, gjDataType_t dtype, int ranks);
// buf[i] = buf[i] / ranks, truncated toward zero, for integer dtypes.
void divide_sum(void* buf, std::size_t count, gjDataType_t dtype, int ranks);

}  // namespace gj
