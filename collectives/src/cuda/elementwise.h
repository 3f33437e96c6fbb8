// Element-wise device kernels the NCCL backend needs to keep the library's arithmetic
// (see gj/collectives.h) where NCCL's own differs:
// - scale: the divide-then-sum pre-scaling of gjAvg on floating types, rounded like the MPI
//   backend's host::scale (f16/bf16 and f32 multiply in f32, f64 in f64; round to nearest even).
// - divide: gjAvg on integer types, the wrapped sum divided by the rank count, truncated toward
//   zero (NCCL's own integer average is defined for unsigned types only).
#pragma once

#include <cstddef>

#include "gj/collectives.h"

namespace gj::cuda {

// out[i] = in[i] * factor (out may equal in). Stream-ordered. Floating dtypes as described
// above; integers (gjInt32, gjInt64, gjUint8) in f64, truncated toward zero (prescale/postscale).
void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double factor, void* stream);

// buf[i] /= divisor for integer dtypes (gjInt32, gjInt64, gjUint8); divisor >= 1. Stream-ordered.
void divide(void* buf, std::size_t count, gjDataType_t dtype, int divisor, void* stream);

}  // namespace gj::cuda
