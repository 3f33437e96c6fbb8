// Host reduction kernels. Every hot loop is a plain indexed loop over __restrict pointers
// with a select-only body, so GCC/Clang auto-vectorize it at -O2/-O3; on x86-64 each entry
// point is additionally cloned for AVX2 and picked at load time (ifunc), so a portable
// x86-64 build still runs 256-bit code where the CPU has it.
#include "host/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "error.h"
#include "host/half_bits.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

// GCC only: Clang rejects target_clones together with flatten (Clang builds get the
// baseline x86-64 vectorization, plus the hand-written AVX2 paths below).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(GJ_NO_TARGET_CLONES)
#define GJ_KERNEL __attribute__((target_clones("avx2", "default"), flatten))
#endif
#ifndef GJ_KERNEL
#define GJ_KERNEL __attribute__((flatten))
#endif

namespace gj::host {
namespace {

[[noreturn]] void bad_dtype(const char* fn, gjDataType_t dtype) {
  throw Error(gjInvalidArgument, std::string("gj::host::") + fn + ": dtype=" +
                                     std::to_string(static_cast<int>(dtype)) +
                                     " is not a gjDataType_t this function accepts");
}

[[noreturn]] void bad_op(gjRedOp_t op) {
  throw Error(gjInvalidArgument, "gj::host::reduce_into: op=" + std::to_string(static_cast<int>(op)) +
                                     " is not a gjRedOp_t (sum, avg, min, max, prod)");
}

// Min/max follow Open MPI's MPI_MIN/MPI_MAX element function (acc < in ? acc : in), which
// is also exactly what minps/maxps compute, so the loops vectorize without -ffast-math.
struct Sum {
  template <class T>
  T operator()(T a, T b) const { return a + b; }
};
struct Prod {
  template <class T>
  T operator()(T a, T b) const { return a * b; }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const { return a < b ? a : b; }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const { return a > b ? a : b; }
};

template <class T, class F>
inline void zip(T* __restrict acc, const T* __restrict in, std::size_t n, F f) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = f(acc[i], in[i]);
}

// Sum and product of signed integers run on the unsigned type of the same width: wrap-around
// is defined there (the header promises C unsigned wrap) and the low bits are identical.
template <class T, class U>
inline void reduce_int(T* acc, const T* in, std::size_t n, gjRedOp_t op) {
  switch (op) {
    case gjSum:
    case gjAvg:
      zip(reinterpret_cast<U*>(acc), reinterpret_cast<const U*>(in), n, Sum{});
      return;
    case gjProd:
      zip(reinterpret_cast<U*>(acc), reinterpret_cast<const U*>(in), n, Prod{});
      return;
    case gjMin: zip(acc, in, n, Min{}); return;
    case gjMax: zip(acc, in, n, Max{}); return;
    default: bad_op(op);
  }
}

template <class T>
inline void reduce_float(T* acc, const T* in, std::size_t n, gjRedOp_t op) {
  switch (op) {
    case gjSum:
    case gjAvg: zip(acc, in, n, Sum{}); return;
    case gjProd: zip(acc, in, n, Prod{}); return;
    case gjMin: zip(acc, in, n, Min{}); return;
    case gjMax: zip(acc, in, n, Max{}); return;
    default: bad_op(op);
  }
}

struct F16 {
  static float widen(std::uint16_t h) { return bits::f16_to_f32(h); }
  static std::uint16_t narrow(float f) { return bits::f32_to_f16(f); }
};
struct BF16 {
  static float widen(std::uint16_t h) { return bits::bf16_to_f32(h); }
  static std::uint16_t narrow(float f) { return bits::f32_to_bf16(f); }
};

template <class H>
inline void widen(float* __restrict out, const std::uint16_t* __restrict in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = H::widen(in[i]);
}

template <class H>
inline void narrow(std::uint16_t* __restrict out, const float* __restrict in, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = H::narrow(in[i]);
}

// Widen, reduce in f32, round back: one fused pass per element rather than staging blocks
// in f32 arrays; the vectorizer turns it into a single loop (measured ~2x over staging).
template <class H, class F>
inline void zip_half(std::uint16_t* __restrict acc, const std::uint16_t* __restrict in, std::size_t n, F f) {
  for (std::size_t i = 0; i < n; ++i) acc[i] = H::narrow(f(H::widen(acc[i]), H::widen(in[i])));
}

template <class H>
inline void reduce_half(std::uint16_t* acc, const std::uint16_t* in, std::size_t n, gjRedOp_t op) {
  switch (op) {
    case gjSum:
    case gjAvg: zip_half<H>(acc, in, n, Sum{}); return;
    case gjProd: zip_half<H>(acc, in, n, Prod{}); return;
    case gjMin: zip_half<H>(acc, in, n, Min{}); return;
    case gjMax: zip_half<H>(acc, in, n, Max{}); return;
    default: bad_op(op);
  }
}

template <class H>
inline void scale_half(std::uint16_t* out, const std::uint16_t* in, std::size_t n, float s) {
  for (std::size_t i = 0; i < n; ++i) out[i] = H::narrow(H::widen(in[i]) * s);
}

template <class T>
inline void scale_plain(T* out, const T* in, std::size_t n, T s) {
  for (std::size_t i = 0; i < n; ++i) out[i] = in[i] * s;
}

// trunc(in[i] * s) in f64, saturated to T's range (an out-of-range conversion would be UB).
template <class T>
void scale_int(T* out, const T* in, std::size_t n, double s) {
  constexpr double lo = static_cast<double>(std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
  for (std::size_t i = 0; i < n; ++i) {
    const double v = std::trunc(static_cast<double>(in[i]) * s);
    out[i] = v <= lo ? std::numeric_limits<T>::min() : v >= hi ? std::numeric_limits<T>::max() : static_cast<T>(v);
  }
}

template <class T, class D>
inline void divide_int(T* buf, std::size_t n, D d) {
  for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<T>(buf[i] / d);
}

// One cloned entry point per dtype family keeps each clone small and fully inlined.
GJ_KERNEL void reduce_f32(float* a, const float* b, std::size_t n, gjRedOp_t op) { reduce_float(a, b, n, op); }
GJ_KERNEL void reduce_f64(double* a, const double* b, std::size_t n, gjRedOp_t op) { reduce_float(a, b, n, op); }
GJ_KERNEL void reduce_f16(std::uint16_t* a, const std::uint16_t* b, std::size_t n, gjRedOp_t op) {
  reduce_half<F16>(a, b, n, op);
}
GJ_KERNEL void reduce_bf16(std::uint16_t* a, const std::uint16_t* b, std::size_t n, gjRedOp_t op) {
  reduce_half<BF16>(a, b, n, op);
}
GJ_KERNEL void reduce_i32(std::int32_t* a, const std::int32_t* b, std::size_t n, gjRedOp_t op) {
  reduce_int<std::int32_t, std::uint32_t>(a, b, n, op);
}
GJ_KERNEL void reduce_i64(std::int64_t* a, const std::int64_t* b, std::size_t n, gjRedOp_t op) {
  reduce_int<std::int64_t, std::uint64_t>(a, b, n, op);
}
GJ_KERNEL void reduce_u8(std::uint8_t* a, const std::uint8_t* b, std::size_t n, gjRedOp_t op) {
  reduce_int<std::uint8_t, std::uint8_t>(a, b, n, op);
}

GJ_KERNEL void scale_f32(float* o, const float* i, std::size_t n, float s) { scale_plain(o, i, n, s); }
GJ_KERNEL void scale_f64(double* o, const double* i, std::size_t n, double s) { scale_plain(o, i, n, s); }
GJ_KERNEL void scale_f16(std::uint16_t* o, const std::uint16_t* i, std::size_t n, float s) {
  scale_half<F16>(o, i, n, s);
}
GJ_KERNEL void scale_bf16(std::uint16_t* o, const std::uint16_t* i, std::size_t n, float s) {
  scale_half<BF16>(o, i, n, s);
}

GJ_KERNEL void widen_f16(float* o, const std::uint16_t* i, std::size_t n) { widen<F16>(o, i, n); }
GJ_KERNEL void widen_bf16(float* o, const std::uint16_t* i, std::size_t n) { widen<BF16>(o, i, n); }
GJ_KERNEL void narrow_f16(std::uint16_t* o, const float* i, std::size_t n) { narrow<F16>(o, i, n); }
GJ_KERNEL void narrow_bf16(std::uint16_t* o, const float* i, std::size_t n) { narrow<BF16>(o, i, n); }

#if defined(__x86_64__)
// Copies with explicit SIMD loads/stores; compilers never turn intrinsic loops back into a
// memcpy call (they do turn plain byte loops into one).
__attribute__((target("avx2"))) void copy_avx2(unsigned char* d, const unsigned char* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  for (; i + 32 <= n; i += 32) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);  // < 32 bytes: no rep movsb
}

void copy_sse2(unsigned char* d, const unsigned char* s, std::size_t n) {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  for (; i + 16 <= n; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);
}

// __builtin_cpu_init first: this initializer may run before libgcc's own CPU detection.
const bool kHaveAvx2 = (__builtin_cpu_init(), __builtin_cpu_supports("avx2") != 0);
// CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports does not know "f16c").
bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
const bool kHaveF16c = kHaveAvx2 && cpu_has_f16c();

// bf16 by hand: GCC's vectorization of the portable loop repacks through 16-bit lanes and
// runs at about a third of this speed. Same arithmetic as half_bits.h (checked by the same
// tests). No shuffles: a 32-bit lane holds two bf16 values, the odd one already in f32
// position (mask the low half off) and the even one a shift away; each is computed and
// rounded in place, and the two results are merged back with a mask and a shift.
__attribute__((target("avx2"))) inline __m256i bf16_round_in_place(__m256 f) {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  return _mm256_blendv_epi8(rounded, quiet, nan);  // the bf16 result is the high 16 bits
}

// The f32 arithmetic of the fast paths, 8 lanes at a time. Minps/maxps(a, b) are exactly
// a < b ? a : b and a > b ? a : b (Min/Max above).
template <int Op>
struct VecOp {
  __attribute__((target("avx2"))) __m256 operator()(__m256 a, __m256 b) const {
    if constexpr (Op == gjProd) return _mm256_mul_ps(a, b);
    else if constexpr (Op == gjMin) return _mm256_min_ps(a, b);
    else if constexpr (Op == gjMax) return _mm256_max_ps(a, b);
    else return _mm256_add_ps(a, b);
  }
};
struct VecScale {
  float s;
  __attribute__((target("avx2"))) __m256 operator()(__m256 a, __m256) const {
    return _mm256_mul_ps(a, _mm256_set1_ps(s));
  }
};
struct Scale {  // the scalar tail of VecScale
  float s;
  float operator()(float a, float) const { return a * s; }
};

// out[i] = round(vec(widen(x[i]), widen(y[i]))); `scalar` is the same function on one
// element, for the tail. out may be x or y.
template <class V, class S>
__attribute__((target("avx2"))) void map_bf16_avx2(std::uint16_t* out, const std::uint16_t* x, const std::uint16_t* y,
                                                   std::size_t n, V vec, S scalar) {
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i));
    const __m256i odd = bf16_round_in_place(
        vec(_mm256_castsi256_ps(_mm256_and_si256(a, high)), _mm256_castsi256_ps(_mm256_and_si256(b, high))));
    const __m256i even = bf16_round_in_place(
        vec(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(b, 16))));
    const __m256i merged = _mm256_or_si256(_mm256_and_si256(odd, high), _mm256_srli_epi32(even, 16));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), merged);
  }
  for (; i < n; ++i) out[i] = BF16::narrow(scalar(BF16::widen(x[i]), BF16::widen(y[i])));
}

// f16 through the F16C conversions (exact widening; narrowing with an explicit round to
// nearest even, NaNs quieted with their top payload bits, as half_bits.h does): about 10x
// the portable loop, whose f16 rounding GCC cannot vectorize well.
template <class V, class S>
__attribute__((target("avx2,f16c"))) void map_f16_f16c(std::uint16_t* out, const std::uint16_t* x,
                                                       const std::uint16_t* y, std::size_t n, V vec, S scalar) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(vec(a, b), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = F16::narrow(scalar(F16::widen(x[i]), F16::widen(y[i])));
}

// acc = op(acc, in) for f16 (F16C) or bf16 (AVX2); false when the CPU has neither.
bool reduce_half_fast(std::uint16_t* acc, const std::uint16_t* in, std::size_t n, gjDataType_t t, gjRedOp_t op) {
  const bool f16 = t == gjFloat16;
  if (f16 ? !kHaveF16c : !kHaveAvx2) return false;
  auto run = [&](auto vec, auto scalar) {
    if (f16) map_f16_f16c(acc, acc, in, n, vec, scalar);
    else map_bf16_avx2(acc, acc, in, n, vec, scalar);
  };
  switch (op) {
    case gjSum: case gjAvg: run(VecOp<gjSum>{}, Sum{}); return true;
    case gjProd: run(VecOp<gjProd>{}, Prod{}); return true;
    case gjMin: run(VecOp<gjMin>{}, Min{}); return true;
    case gjMax: run(VecOp<gjMax>{}, Max{}); return true;
    default: return false;
  }
}

// out = in * s for f16 (F16C) or bf16 (AVX2); false when the CPU has neither.
bool scale_half_fast(std::uint16_t* out, const std::uint16_t* in, std::size_t n, gjDataType_t t, float s) {
  if (t == gjFloat16 ? !kHaveF16c : !kHaveAvx2) return false;
  if (t == gjFloat16) map_f16_f16c(out, in, in, n, VecScale{s}, Scale{s});
  else map_bf16_avx2(out, in, in, n, VecScale{s}, Scale{s});
  return true;
}
#else
bool reduce_half_fast(std::uint16_t*, const std::uint16_t*, std::size_t, gjDataType_t, gjRedOp_t) { return false; }
bool scale_half_fast(std::uint16_t*, const std::uint16_t*, std::size_t, gjDataType_t, float) { return false; }
#endif

}  // namespace

void copy(void* dst, const void* src, std::size_t bytes) {
  if (dst == src || bytes == 0) return;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
#if defined(__x86_64__)
  if (kHaveAvx2) copy_avx2(d, s, bytes);
  else copy_sse2(d, s, bytes);
#else
  std::memcpy(d, s, bytes);
#endif
}

void reduce_into(void* acc, const void* in, std::size_t count, gjDataType_t dtype, gjRedOp_t op) {
  if (static_cast<unsigned>(op) >= static_cast<unsigned>(gjNumRedOps)) bad_op(op);
  switch (dtype) {
    case gjFloat32: reduce_f32(static_cast<float*>(acc), static_cast<const float*>(in), count, op); return;
    case gjFloat64: reduce_f64(static_cast<double*>(acc), static_cast<const double*>(in), count, op); return;
    case gjFloat16:
    case gjBfloat16: {
      auto* a = static_cast<std::uint16_t*>(acc);
      const auto* b = static_cast<const std::uint16_t*>(in);
      if (reduce_half_fast(a, b, count, dtype, op)) return;
      if (dtype == gjFloat16) reduce_f16(a, b, count, op);
      else reduce_bf16(a, b, count, op);
      return;
    }
    case gjInt32:
      reduce_i32(static_cast<std::int32_t*>(acc), static_cast<const std::int32_t*>(in), count, op);
      return;
    case gjInt64:
      reduce_i64(static_cast<std::int64_t*>(acc), static_cast<const std::int64_t*>(in), count, op);
      return;
    case gjUint8:
      reduce_u8(static_cast<std::uint8_t*>(acc), static_cast<const std::uint8_t*>(in), count, op);
      return;
    default: bad_dtype("reduce_into", dtype);
  }
}

void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double s) {
  switch (dtype) {
    case gjFloat32:
      scale_f32(static_cast<float*>(out), static_cast<const float*>(in), count, static_cast<float>(s));
      return;
    case gjFloat64: scale_f64(static_cast<double*>(out), static_cast<const double*>(in), count, s); return;
    case gjFloat16:
    case gjBfloat16: {
      auto* o = static_cast<std::uint16_t*>(out);
      const auto* i = static_cast<const std::uint16_t*>(in);
      const auto f = static_cast<float>(s);
      if (scale_half_fast(o, i, count, dtype, f)) return;
      if (dtype == gjFloat16) scale_f16(o, i, count, f);
      else scale_bf16(o, i, count, f);
      return;
    }
    case gjInt32: scale_int(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(in), count, s); return;
    case gjInt64: scale_int(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(in), count, s); return;
    case gjUint8: scale_int(static_cast<std::uint8_t*>(out), static_cast<const std::uint8_t*>(in), count, s); return;
    default: bad_dtype("scale", dtype);
  }
}

void divide(void* buf, std::size_t count, gjDataType_t dtype, int divisor) {
  if (divisor <= 0) {
    throw Error(gjInvalidArgument, "gj::host::divide: divisor=" + std::to_string(divisor) + " must be > 0");
  }
  switch (dtype) {
    case gjInt32: divide_int(static_cast<std::int32_t*>(buf), count, std::int32_t{divisor}); return;
    case gjInt64: divide_int(static_cast<std::int64_t*>(buf), count, std::int64_t{divisor}); return;
    case gjUint8:
      // Divided as int: a divisor above 255 has no u8 value, and every u8 / it is 0.
      divide_int(static_cast<std::uint8_t*>(buf), count, divisor);
      return;
    default: bad_dtype("divide (integer types only)", dtype);
  }
}

void to_f32(float* out, const void* in, std::size_t count, gjDataType_t dtype) {
  switch (dtype) {
    case gjFloat16: widen_f16(out, static_cast<const std::uint16_t*>(in), count); return;
    case gjBfloat16: widen_bf16(out, static_cast<const std::uint16_t*>(in), count); return;
    default: bad_dtype("to_f32 (f16/bf16 only)", dtype);
  }
}

void from_f32(void* out, const float* in, std::size_t count, gjDataType_t dtype) {
  switch (dtype) {
    case gjFloat16: narrow_f16(static_cast<std::uint16_t*>(out), in, count); return;
    case gjBfloat16: narrow_bf16(static_cast<std::uint16_t*>(out), in, count); return;
    default: bad_dtype("from_f32 (f16/bf16 only)", dtype);
  }
}

float f16_to_f32(std::uint16_t h) { return bits::f16_to_f32(h); }
std::uint16_t f32_to_f16(float f) { return bits::f32_to_f16(f); }
float bf16_to_f32(std::uint16_t b) { return bits::bf16_to_f32(b); }
std::uint16_t f32_to_bf16(float f) { return bits::f32_to_bf16(f); }

}  // namespace gj::host
