// The element logic of the element-wise kernels (elementwise.h), one function object per
// operation, callable on the device (elementwise.cu's kernels) and on the host (the emulated
// device runtime runs the same objects over emulated device memory: docs/gpu.md, "Emulation").
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "../error.h"
#include "gj/collectives.h"

namespace gj::cuda {

struct ScaleF32 {
  float s;
  __host__ __device__ float operator()(float x) const { return x * s; }
};
struct ScaleF64 {
  double s;
  __host__ __device__ double operator()(double x) const { return x * s; }
};
struct ScaleF16 {
  float s;
  __host__ __device__ __half operator()(__half x) const { return __float2half_rn(__half2float(x) * s); }
};
struct ScaleBf16 {
  float s;
  __host__ __device__ __nv_bfloat16 operator()(__nv_bfloat16 x) const {
    return __float2bfloat16_rn(__bfloat162float(x) * s);
  }
};
// Integers scale in f64, truncate toward zero and saturate to T's range, like host::scale (a
// double outside T's range converted to T is undefined behaviour: a negative factor on uint8
// would be). int64 values beyond 2^53 are rounded to the nearest f64 before the multiply, on
// both backends alike (docs/gpu.md, "Arithmetic").
template <typename T>
struct ScaleInt {
  double s;
  __host__ __device__ T operator()(T x) const {
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    const double v = trunc(static_cast<double>(x) * s);
    if (!(v > lo)) return v != v ? T(0) : std::numeric_limits<T>::min();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
};
// The divisor stays wide: a u8 sum over more than 255 ranks divides to 0, not by a wrapped count.
template <typename T>
struct Divide {
  long long d;
  __host__ __device__ T operator()(T x) const { return static_cast<T>(static_cast<long long>(x) / d); }
};

// The one dtype dispatch of scale() and divide(), for the CUDA kernels and the emulated ones:
// calls apply.template run<T>(element operation, kernel name).
template <class Apply>
void dispatch_scale(gjDataType_t dtype, double factor, Apply&& apply) {
  const auto f = static_cast<float>(factor);
  switch (dtype) {
    case gjFloat32: return apply.template run<float>(ScaleF32{f}, "scale_f32");
    case gjFloat64: return apply.template run<double>(ScaleF64{factor}, "scale_f64");
    case gjFloat16: return apply.template run<__half>(ScaleF16{f}, "scale_f16");
    case gjBfloat16: return apply.template run<__nv_bfloat16>(ScaleBf16{f}, "scale_bf16");
    case gjInt32: return apply.template run<std::int32_t>(ScaleInt<std::int32_t>{factor}, "scale_i32");
    case gjInt64: return apply.template run<std::int64_t>(ScaleInt<std::int64_t>{factor}, "scale_i64");
    case gjUint8: return apply.template run<std::uint8_t>(ScaleInt<std::uint8_t>{factor}, "scale_u8");
    default:
      throw Error(gjInternalError, "gj::cuda::scale(dtype=" + std::to_string(dtype) + "): not a reducible type");
  }
}

template <class Apply>
void dispatch_divide(gjDataType_t dtype, int divisor, Apply&& apply) {
  if (divisor < 1) throw Error(gjInternalError, "gj::cuda::divide(divisor=" + std::to_string(divisor) + ")");
  switch (dtype) {
    case gjInt32: return apply.template run<std::int32_t>(Divide<std::int32_t>{divisor}, "divide_i32");
    case gjInt64: return apply.template run<std::int64_t>(Divide<std::int64_t>{divisor}, "divide_i64");
    case gjUint8: return apply.template run<std::uint8_t>(Divide<std::uint8_t>{divisor}, "divide_u8");
    default:
      throw Error(gjInternalError, "gj::cuda::divide(dtype=" + std::to_string(dtype) + "): not an integer type");
  }
}

}  // namespace gj::cuda
