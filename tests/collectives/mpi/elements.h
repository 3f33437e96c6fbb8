// Test-side element encoding, independent of the library's conversions: values the tests use
// are exactly representable (small integers, dyadic fractions), so encode/decode are exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gj/collectives.h"

namespace gjt {

inline std::size_t elem_size(gjDataType_t d) { return gjDataTypeSize(d); }

inline std::uint16_t f16_bits(double v) {
  if (v == 0) return std::signbit(v) ? 0x8000 : 0;
  const std::uint16_t sign = v < 0 ? 0x8000 : 0;
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  const auto mant = static_cast<std::uint16_t>(std::lround(m * 2048) - 1024);
  return static_cast<std::uint16_t>(sign | ((e - 1 + 15) << 10) | mant);
}

inline double f16_value(std::uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}

inline std::uint16_t bf16_bits(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>(u >> 16);  // exact for the values tests use
}

inline double bf16_value(std::uint16_t b) {
  const std::uint32_t u = std::uint32_t{b} << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

inline void encode(gjDataType_t d, double v, void* dst) {
  switch (d) {
    case gjFloat32: { float x = static_cast<float>(v); std::memcpy(dst, &x, 4); break; }
    case gjFloat64: std::memcpy(dst, &v, 8); break;
    case gjFloat16: { std::uint16_t x = f16_bits(v); std::memcpy(dst, &x, 2); break; }
    case gjBfloat16: { std::uint16_t x = bf16_bits(v); std::memcpy(dst, &x, 2); break; }
    case gjInt32: { auto x = static_cast<std::int32_t>(v); std::memcpy(dst, &x, 4); break; }
    case gjInt64: { auto x = static_cast<std::int64_t>(v); std::memcpy(dst, &x, 8); break; }
    case gjUint8: case gjByte: { auto x = static_cast<std::uint8_t>(v); std::memcpy(dst, &x, 1); break; }
    case gjInt8: { auto x = static_cast<std::int8_t>(v); std::memcpy(dst, &x, 1); break; }
    case gjInt16: { auto x = static_cast<std::int16_t>(v); std::memcpy(dst, &x, 2); break; }
    case gjBool: { std::uint8_t x = v != 0; std::memcpy(dst, &x, 1); break; }
    default: break;
  }
}

inline double decode(gjDataType_t d, const void* src) {
  switch (d) {
    case gjFloat32: { float x; std::memcpy(&x, src, 4); return x; }
    case gjFloat64: { double x; std::memcpy(&x, src, 8); return x; }
    case gjFloat16: { std::uint16_t x; std::memcpy(&x, src, 2); return f16_value(x); }
    case gjBfloat16: { std::uint16_t x; std::memcpy(&x, src, 2); return bf16_value(x); }
    case gjInt32: { std::int32_t x; std::memcpy(&x, src, 4); return x; }
    case gjInt64: { std::int64_t x; std::memcpy(&x, src, 8); return static_cast<double>(x); }
    case gjUint8: case gjByte: case gjBool: { std::uint8_t x; std::memcpy(&x, src, 1); return x; }
    case gjInt8: { std::int8_t x; std::memcpy(&x, src, 1); return x; }
    case gjInt16: { std::int16_t x; std::memcpy(&x, src, 2); return x; }
    default: return NAN;
  }
}

inline bool is_float(gjDataType_t d) { return d == gjFloat32 || d == gjFloat64 || d == gjFloat16 || d == gjBfloat16; }

constexpr gjDataType_t kDtypes[] = {gjFloat32, gjFloat64, gjFloat16, gjBfloat16, gjInt32, gjInt64, gjUint8};
// Every dtype, the data-movement-only ones included (broadcast, allgather).
constexpr gjDataType_t kAllDtypes[] = {gjFloat32, gjFloat64, gjFloat16, gjBfloat16, gjInt32, gjInt64,
                                       gjUint8,   gjInt8,    gjInt16,   gjBool,     gjByte};
constexpr gjRedOp_t kOps[] = {gjSum, gjAvg, gjMin, gjMax, gjProd};

inline const char* dname(gjDataType_t d) {
  static const char* names[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8", "i8", "i16", "bool", "byte"};
  static_assert(sizeof names / sizeof names[0] == gjNumDataTypes, "one name per dtype");
  return d >= 0 && d < gjNumDataTypes ? names[d] : "?";
}
inline const char* oname(gjRedOp_t o) {
  static const char* names[] = {"sum", "avg", "min", "max", "prod"};
  return o >= 0 && o < gjNumRedOps ? names[o] : "?";
}

}  // namespace gjt
