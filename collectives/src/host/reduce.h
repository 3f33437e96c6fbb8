// Host reduction kernels shared by the MPI user-defined ops and the shared-memory path.
// f16/bf16 accumulate in f32 and round to nearest even; gjAvg is NOT handled here (callers
// pre-scale: see the header's divide-then-sum rule), reduce_into treats gjAvg as gjSum.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gj/collectives.h"

namespace gj::host {

// acc[i] = op(acc[i], in[i]) for i < count. acc and in are equal or do not overlap. Integer
// sum/prod wrap (two's complement); min/max are acc < in ? acc : in (Open MPI's MPI_MIN).
// Throws gj::Error(gjInvalidArgument) for an invalid dtype or op.
void reduce_into(void* acc, const void* in, std::size_t count, gjDataType_t dtype, gjRedOp_t op);

// out[i] = in[i] * scale; out == in is allowed. f32, and f16/bf16 via f32 (round to nearest
// even), multiply by the factor rounded to f32; f64 in f64; integers in f64, truncated toward
// zero and saturated to the type's range (the scaling factors' rule, gjAllReduceScaled).
void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double scale);

// Integer avg's final step: buf[i] /= divisor, truncated toward zero, in the type's width
// (i32, i64, u8 only; divisor > 0).
void divide(void* buf, std::size_t count, gjDataType_t dtype, int divisor);
// dst[0, bytes) = src[0, bytes) (no overlap, or dst == src). A plain SIMD load/store loop:
// glibc's memcpy switches to `rep movsb` from 2 KiB up, which runs at ~0.5 GB/s on the VMs
// measured in docs/benchmarks.md (20x slower than this loop); every bulk copy of the host
// paths goes through here.
void copy(void* dst, const void* src, std::size_t bytes);
// Block conversions for f16/bf16 (round to nearest even), vectorized like reduce_into.
void to_f32(float* out, const void* in, std::size_t count, gjDataType_t dtype);
void from_f32(void* out, const float* in, std::size_t count, gjDataType_t dtype);

// Conversions, exposed for tests and the device kernels' reference results.
float f16_to_f32(std::uint16_t h);
std::uint16_t f32_to_f16(float f);
float bf16_to_f32(std::uint16_t b);
std::uint16_t f32_to_bf16(float f);

}  // namespace gj::host
