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

}  // namespace gj::cuda
