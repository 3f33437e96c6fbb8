// Reference f16/bf16 encoders written independently of half_bits.h: they find the nearest
// representable value by bisection over the ordered patterns in double arithmetic (a tie goes
// to the even pattern), instead of manipulating f32 bit patterns.
// Independent on purpose, down to the bit casts: an oracle that shared half_bits.h's code would
// repeat its mistakes, and the conversion tests could not fail.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gj::host::ref {

inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Value of a 16-bit pattern with `mbits` mantissa bits and exponent bias `bias`; the
// all-ones exponent with a zero mantissa is returned as 2^(emax+1) (IEEE rounding treats
// overflow as if the exponent range were unbounded).
inline double value_of(std::uint32_t mag, int mbits, int bias) {
  const std::uint32_t e = mag >> mbits;
  const std::uint32_t m = mag & ((1u << mbits) - 1u);
  if (e == 0) return std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  return std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -mbits), static_cast<int>(e) - bias);
}

// Nearest-even encoding of |x| (finite, >= 0) as a sign-less pattern with the given layout;
// brute bisection over the ordered magnitudes, then a tie goes to the even pattern.
inline std::uint32_t encode_nearest_even(double x, int mbits, int bias, std::uint32_t inf_pattern) {
  std::uint32_t lo = 0, hi = inf_pattern;  // value_of(lo) <= x < value_of(hi) unless x >= max
  if (x >= value_of(hi, mbits, bias)) return inf_pattern;
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (value_of(mid, mbits, bias) <= x) lo = mid; else hi = mid;
  }
  const double dlo = x - value_of(lo, mbits, bias);
  const double dhi = value_of(hi, mbits, bias) - x;
  if (dlo < dhi) return lo;
  if (dhi < dlo) return hi;
  return (lo & 1u) ? hi : lo;
}

inline std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7E00u | ((u >> 13) & 0x3FFu));
  return static_cast<std::uint16_t>(sign | encode_nearest_even(std::fabs(double{f}), 10, 15, 0x7C00u));
}

inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  return static_cast<std::uint16_t>(sign | encode_nearest_even(std::fabs(double{f}), 7, 127, 0x7F80u));
}

inline double f16_value(std::uint16_t h) {
  const double v = (h & 0x7FFFu) == 0x7C00u ? HUGE_VAL : value_of(h & 0x7FFFu, 10, 15);
  return (h & 0x8000u) ? -v : v;
}

}  // namespace gj::host::ref
