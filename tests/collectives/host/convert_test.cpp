// f16/bf16 <-> f32 conversions: exhaustive over every 16-bit pattern, and f32 -> 16-bit
// rounding at every tie point and its neighbours, against an independent double-based
// reference (reference_half.h). Scalar and block (vectorized) entry points both checked.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "host/reduce.h"
#include "reference_half.h"

namespace {

using gj::host::ref::bits_of;
using gj::host::ref::float_of;

struct Format {
  const char* name;
  gjDataType_t dtype;
  std::uint16_t (*narrow)(float);
  float (*widen)(std::uint16_t);
  std::uint16_t (*ref_narrow)(float);
  std::uint16_t quiet_bit;  // set by narrowing a NaN
  std::uint16_t exp_mask;
};

const Format kFormats[] = {
    {"f16", gjFloat16, gj::host::f32_to_f16, gj::host::f16_to_f32, gj::host::ref::f32_to_f16, 0x0200, 0x7C00},
    {"bf16", gjBfloat16, gj::host::f32_to_bf16, gj::host::bf16_to_f32, gj::host::ref::f32_to_bf16, 0x0040, 0x7F80},
};

bool is_nan16(const Format& f, std::uint16_t h) {
  return (h & f.exp_mask) == f.exp_mask && (h & ~f.exp_mask & 0x7FFFu) != 0;
}

double widen_reference(const Format& f, std::uint16_t h) {
  if (f.dtype == gjBfloat16) return double{float_of(std::uint32_t{h} << 16)};
  return gj::host::ref::f16_value(h);
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%X", v);
  return buf;
}

}  // namespace

TEST_CASE("every 16-bit pattern widens exactly and narrows back to itself", "[convert]") {
  for (const Format& f : kFormats) {
    SECTION(f.name) {
      std::vector<std::uint16_t> all(65536), back(65536);
      std::vector<float> wide(65536);
      for (std::uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<std::uint16_t>(i);
      gj::host::to_f32(wide.data(), all.data(), all.size(), f.dtype);
      gj::host::from_f32(back.data(), wide.data(), wide.size(), f.dtype);
      std::size_t bad = 0;
      for (std::uint32_t i = 0; i < 65536 && bad < 5; ++i) {
        const auto h = static_cast<std::uint16_t>(i);
        const float scalar = f.widen(h);
        const bool same_block = bits_of(scalar) == bits_of(wide[i]);
        bool ok = same_block;
        if (is_nan16(f, h)) {
          ok = ok && std::isnan(scalar) && back[i] == (h | f.quiet_bit) && f.narrow(scalar) == back[i];
        } else {
          ok = ok && double{scalar} == widen_reference(f, h) && std::signbit(scalar) == ((h & 0x8000u) != 0) &&
               back[i] == h && f.narrow(scalar) == h;
        }
        if (!ok) {
          ++bad;
          FAIL_CHECK(f.name << " pattern " << hex(h) << ": widened " << hex(bits_of(scalar)) << " (block "
                            << hex(bits_of(wide[i])) << "), narrowed back " << hex(back[i]));
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("f32 narrowing rounds to nearest even at every tie and its neighbours", "[convert]") {
  for (const Format& f : kFormats) {
    SECTION(f.name) {
      // For each finite 16-bit value and its successor: the exact midpoint (a tie), one f32
      // ulp either side of it, and one f32 ulp either side of the value itself; both signs.
      std::vector<float> inputs;
      for (std::uint32_t h = 0; h < f.exp_mask; ++h) {
        const double lo = widen_reference(f, static_cast<std::uint16_t>(h));
        const double hi = h + 1 == f.exp_mask ? 2.0 * widen_reference(f, static_cast<std::uint16_t>(h)) -
                                                    widen_reference(f, static_cast<std::uint16_t>(h - 1))
                                              : widen_reference(f, static_cast<std::uint16_t>(h + 1));
        const auto mid = static_cast<float>((lo + hi) / 2);  // exact: f32 has spare bits
        const auto v = static_cast<float>(lo);
        for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), v,
                        std::nextafter(v, INFINITY), std::nextafter(v, 0.0f)}) {
          inputs.push_back(x);
          inputs.push_back(-x);
        }
      }
      for (float x : {INFINITY, -INFINITY, NAN, -NAN, float_of(0x7F800001u), float_of(0xFF800001u),
                      float_of(0x7FC12345u), 3.4028235e38f, -3.4028235e38f, 1e-45f, -1e-45f}) {
        inputs.push_back(x);
      }
      // Plus a spread sample of all f32 patterns.
      for (std::uint64_t u = 0; u <= 0xFFFFFFFFull; u += 65521) inputs.push_back(float_of(static_cast<std::uint32_t>(u)));

      std::vector<std::uint16_t> block(inputs.size());
      gj::host::from_f32(block.data(), inputs.data(), inputs.size(), f.dtype);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < inputs.size() && bad < 5; ++i) {
        const std::uint16_t want = f.ref_narrow(inputs[i]);
        const std::uint16_t got = f.narrow(inputs[i]);
        if (got != want || block[i] != want) {
          ++bad;
          FAIL_CHECK(f.name << " from f32 " << hex(bits_of(inputs[i])) << " (" << inputs[i] << "): got "
                            << hex(got) << " (block " << hex(block[i]) << "), want " << hex(want));
        }
      }
      CHECK(bad == 0);
      CHECK(inputs.size() > 100000);
    }
  }
}

TEST_CASE("known conversion values", "[convert]") {
  struct Row {
    float in;
    std::uint16_t f16, bf16;
  };
  const Row rows[] = {
      {1.0f, 0x3C00, 0x3F80},      {-2.0f, 0xC000, 0xC000},     {65504.0f, 0x7BFF, 0x4780},
      {65520.0f, 0x7C00, 0x4780},  {0x1p-24f, 0x0001, 0x3380},  {0x1p-25f, 0x0000, 0x3300},
      {0x1.8p-25f, 0x0001, 0x3340}, {0.0f, 0x0000, 0x0000},     {-0.0f, 0x8000, 0x8000},
      {1.00390625f, 0x3C04, 0x3F80}, {1.01171875f, 0x3C0C, 0x3F82},
  };
  for (const Row& r : rows) {
    CAPTURE(r.in);
    CHECK(gj::host::f32_to_f16(r.in) == r.f16);
    CHECK(gj::host::f32_to_bf16(r.in) == r.bf16);
  }
}
