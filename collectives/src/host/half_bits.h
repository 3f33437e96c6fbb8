// Branch-free f16/bf16 <-> f32 conversions on bit patterns. Inline and select-only (no
// branches, no tables) so that loops over them auto-vectorize; the scalar entry points in
// reduce.h are these same functions, so tests of one cover the other.
#pragma once

#include <cstdint>
#include <cstring>

namespace gj::host::bits {

inline std::uint32_t f32_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float f32_from(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// c ? a : b as mask arithmetic: keeps GCC from turning selects whose inputs include FP ops
// back into branches (it will not speculate a possibly trapping FP op), which would stop
// vectorization.
inline std::uint32_t select(bool c, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return (a & m) | (b & ~m);
}

// bf16 is the top half of an f32: widening is exact.
inline float bf16_to_f32(std::uint16_t b) { return f32_from(std::uint32_t{b} << 16); }

// Round to nearest even on the dropped 16 bits; NaN keeps sign and top payload bits and is
// quieted (so a NaN whose payload lives only in the low bits cannot round to infinity).
inline std::uint16_t f32_to_bf16(float f) {
  const std::uint32_t u = f32_bits(f);
  const bool is_nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  // Selected in 32 bits and narrowed once: keeps the vectorized loop free of 16-bit repacks.
  const std::uint32_t r = is_nan ? (u | 0x00400000u) : u + 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(r >> 16);
}

// Exponent/mantissa moved into f32 position, then rebiased by a multiplication with 2^112:
// exact for normals and turns subnormals into the right normals. Inf/NaN get the f32
// all-ones exponent (payload kept, as F16C's vcvtph2ps does).
inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = (std::uint32_t{h} & 0x8000u) << 16;
  const std::uint32_t em = std::uint32_t{h} & 0x7FFFu;
  const std::uint32_t finite = f32_bits(f32_from(em << 13) * 0x1p112f);
  const std::uint32_t special = (em << 13) | 0x7F800000u;
  return f32_from(select(em >= 0x7C00u, special, finite) | sign);
}

// Round to nearest even (F. Giesen's float_to_half_fast3_rtne, made select-only):
// - |f| >= 65520 rounds to Inf; NaN keeps its top 10 payload bits and is quieted, as F16C's
//   vcvtps2ph does;
// - results that are f16 subnormals: adding 0.5 (as f32) aligns the 10 mantissa bits at the
//   bottom and the FPU's own round-to-nearest-even does the rounding;
// - normals: rebias the exponent and add 0xFFF + the lowest kept bit (ties to even).
inline std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = f32_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7FFFFFFFu;

  const std::uint32_t nan = 0x7E00u | ((a >> 13) & 0x03FFu);
  const std::uint32_t overflow = select(a > 0x7F800000u, nan, 0x7C00u);

  const std::uint32_t denorm_magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const std::uint32_t sub = f32_bits(f32_from(a) + f32_from(denorm_magic_bits)) - denorm_magic_bits;

  const std::uint32_t mant_odd = (a >> 13) & 1u;
  // Unsigned wrap-around is intended: 15 - 127 rebias in the exponent field.
  const std::uint32_t normal = (a + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xFFFu + mant_odd) >> 13;

  const std::uint32_t mag = select(a >= 0x47800000u, overflow, select(a < 0x38800000u, sub, normal));
  return static_cast<std::uint16_t>(mag | sign);
}

}  // namespace gj::host::bits
