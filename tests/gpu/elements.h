// Elements of every gjDataType_t as doubles, for filling and checking test buffers on the host.
// f16/bf16 use the CUDA headers' host conversions (round to nearest even), independent of the
// library's own.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "gj/collectives.h"

namespace gj::test {

inline void store(void* base, std::size_t i, gjDataType_t dtype, double v) {
  auto* p = static_cast<unsigned char*>(base);
  switch (dtype) {
    case gjFloat32: { const auto x = static_cast<float>(v); std::memcpy(p + 4 * i, &x, 4); return; }
    case gjFloat64: { std::memcpy(p + 8 * i, &v, 8); return; }
    case gjFloat16: { const __half x = __float2half_rn(static_cast<float>(v)); std::memcpy(p + 2 * i, &x, 2); return; }
    case gjBfloat16: { const __nv_bfloat16 x = __float2bfloat16_rn(static_cast<float>(v)); std::memcpy(p + 2 * i, &x, 2); return; }
    case gjInt32: { const auto x = static_cast<std::int32_t>(v); std::memcpy(p + 4 * i, &x, 4); return; }
    case gjInt64: { const auto x = static_cast<std::int64_t>(v); std::memcpy(p + 8 * i, &x, 8); return; }
    case gjUint8: { p[i] = static_cast<std::uint8_t>(static_cast<int>(v)); return; }
    default: return;
  }
}

inline double load(const void* base, std::size_t i, gjDataType_t dtype) {
  const auto* p = static_cast<const unsigned char*>(base);
  switch (dtype) {
    case gjFloat32: { float x; std::memcpy(&x, p + 4 * i, 4); return x; }
    case gjFloat64: { double x; std::memcpy(&x, p + 8 * i, 8); return x; }
    case gjFloat16: { __half x; std::memcpy(&x, p + 2 * i, 2); return __half2float(x); }
    case gjBfloat16: { __nv_bfloat16 x; std::memcpy(&x, p + 2 * i, 2); return __bfloat162float(x); }
    case gjInt32: { std::int32_t x; std::memcpy(&x, p + 4 * i, 4); return x; }
    case gjInt64: { std::int64_t x; std::memcpy(&x, p + 8 * i, 8); return static_cast<double>(x); }
    case gjUint8: return p[i];
    default: return 0;
  }
}

inline bool is_float(gjDataType_t d) { return d == gjFloat32 || d == gjFloat64 || d == gjFloat16 || d == gjBfloat16; }

// Relative rounding unit of a floating dtype.
inline double epsilon(gjDataType_t d) {
  switch (d) {
    case gjFloat32: return std::ldexp(1.0, -23);
    case gjFloat64: return std::ldexp(1.0, -52);
    case gjFloat16: return std::ldexp(1.0, -10);
    case gjBfloat16: return std::ldexp(1.0, -7);
    default: return 0;
  }
}

}  // namespace gj::test
