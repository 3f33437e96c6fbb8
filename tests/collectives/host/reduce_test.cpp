// reduce_into / scale / divide over every dtype x op, lengths around the vector widths and
// the f16/bf16 block size, with exactly representable inputs; plus rounding, wrap-around and
// invalid-argument rows.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "dtype.h"
#include "error.h"
#include "host/reduce.h"
#include "reference_half.h"

namespace {

using gj::dtype_name;
std::size_t elem_size(gjDataType_t t) { return gj::dtype_size(t); }

// Buffer of one dtype, read and written as doubles (all test values are exact in every type).
struct Buf {
  gjDataType_t t;
  std::vector<unsigned char> bytes;
  Buf(gjDataType_t type, std::size_t n) : t(type), bytes(n * elem_size(type) + 1) {}
  void* data() { return bytes.data(); }
  template <class T>
  void put_as(std::size_t i, T v) { std::memcpy(&bytes[i * sizeof(T)], &v, sizeof(T)); }
  template <class T>
  T get_as(std::size_t i) const {
    T v;
    std::memcpy(&v, &bytes[i * sizeof(T)], sizeof(T));
    return v;
  }
  void set(std::size_t i, double v) {
    switch (t) {
      case gjFloat32: put_as(i, static_cast<float>(v)); break;
      case gjFloat64: put_as(i, v); break;
      case gjFloat16: put_as(i, gj::host::ref::f32_to_f16(static_cast<float>(v))); break;
      case gjBfloat16: put_as(i, gj::host::ref::f32_to_bf16(static_cast<float>(v))); break;
      case gjInt32: put_as(i, static_cast<std::int32_t>(v)); break;
      case gjInt64: put_as(i, static_cast<std::int64_t>(v)); break;
      default: put_as(i, static_cast<std::uint8_t>(v)); break;
    }
  }
  double get(std::size_t i) const {
    switch (t) {
      case gjFloat32: return get_as<float>(i);
      case gjFloat64: return get_as<double>(i);
      case gjFloat16: return gj::host::ref::f16_value(get_as<std::uint16_t>(i));
      case gjBfloat16: return gj::host::ref::float_of(std::uint32_t{get_as<std::uint16_t>(i)} << 16);
      case gjInt32: return get_as<std::int32_t>(i);
      case gjInt64: return static_cast<double>(get_as<std::int64_t>(i));
      default: return get_as<std::uint8_t>(i);
    }
  }
};

double apply(gjRedOp_t op, double a, double b) {
  switch (op) {
    case gjSum: case gjAvg: return a + b;
    case gjMin: return a < b ? a : b;
    case gjMax: return a > b ? a : b;
    default: return a * b;
  }
}

const gjDataType_t kTypes[] = {gjFloat32, gjFloat64, gjFloat16, gjBfloat16, gjInt32, gjInt64, gjUint8};
const gjRedOp_t kOps[] = {gjSum, gjAvg, gjMin, gjMax, gjProd};

}  // namespace

TEST_CASE("reduce_into: every dtype x op x length with exact inputs", "[reduce]") {
  const std::size_t lengths[] = {0, 1, 3, 7, 8, 31, 33, 1023, 1024, 1025, 4099};
  for (gjDataType_t t : kTypes) {
    for (gjRedOp_t op : kOps) {
      for (std::size_t n : lengths) {
        CAPTURE(dtype_name(t), static_cast<int>(op), n);
        const bool is_unsigned = t == gjUint8;
        Buf acc(t, n), in(t, n);
        std::vector<double> want(n);
        for (std::size_t i = 0; i < n; ++i) {
          const double a = static_cast<double>(i % 7) + (is_unsigned ? 1 : -3);
          const double b = static_cast<double>((i * 3) % 5) + (is_unsigned ? 0 : -2);
          acc.set(i, a);
          in.set(i, b);
          want[i] = apply(op, a, b);
        }
        const unsigned char sentinel = acc.bytes.back();
        gj::host::reduce_into(acc.data(), in.data(), n, t, op);
        std::size_t first_bad = n;
        for (std::size_t i = 0; i < n && first_bad == n; ++i) {
          if (acc.get(i) != want[i]) first_bad = i;
        }
        INFO("first wrong index " << first_bad << " got " << (first_bad < n ? acc.get(first_bad) : 0.0)
                                  << " want " << (first_bad < n ? want[first_bad] : 0.0));
        CHECK(first_bad == n);
        CHECK(acc.bytes.back() == sentinel);  // nothing written past count
      }
    }
  }
}

TEST_CASE("reduce_into: rounding, overflow, wrap-around, NaN and aliasing rows", "[reduce]") {
  struct Row {
    const char* what;
    gjDataType_t t;
    gjRedOp_t op;
    double a, b, want;
  };
  const Row rows[] = {
      {"f16 tie to even stays", gjFloat16, gjSum, 2048, 1, 2048},
      {"f16 tie to even rounds up", gjFloat16, gjSum, 2048, 3, 2052},
      {"f16 overflow to inf", gjFloat16, gjSum, 65504, 16, std::numeric_limits<double>::infinity()},
      {"f16 just below overflow", gjFloat16, gjSum, 65504, 8, 65504},
      {"f16 subnormal sum", gjFloat16, gjSum, 0x1p-24, 0x1p-24, 0x1p-23},
      {"bf16 tie to even stays", gjBfloat16, gjSum, 256, 1, 256},
      {"bf16 tie to even rounds up", gjBfloat16, gjSum, 256, 3, 260},
      {"bf16 product rounds", gjBfloat16, gjProd, 129, 129, 16640},  // 16641 -> 16640 (ulp 128)
      {"bf16 overflow to inf", gjBfloat16, gjSum, 3.3895313892515355e38, 3.3895313892515355e38,
       std::numeric_limits<double>::infinity()},
      {"bf16 min", gjBfloat16, gjMin, -3, 2, -3},
      {"bf16 max", gjBfloat16, gjMax, -3, 2, 2},
      {"f32 min of negatives", gjFloat32, gjMin, -1.5, -2.5, -2.5},
      {"f64 max", gjFloat64, gjMax, 1e300, -1e300, 1e300},
      {"i32 sum wraps", gjInt32, gjSum, 2147483647.0, 1, -2147483648.0},
      {"i32 prod wraps", gjInt32, gjProd, 65536, 65536, 0},
      {"i64 min", gjInt64, gjMin, -9007199254740992.0, 5, -9007199254740992.0},
      {"u8 sum wraps", gjUint8, gjSum, 200, 100, 44},
      {"u8 max", gjUint8, gjMax, 200, 100, 200},
  };
  // 37 copies of each row: the SIMD body and the scalar tail both see it.
  const std::size_t n = 37;
  for (const Row& r : rows) {
    CAPTURE(r.what);
    Buf acc(r.t, n), in(r.t, n);
    for (std::size_t i = 0; i < n; ++i) {
      if (r.t == gjInt32 && r.a > 2147483646.0) {
        acc.put_as<std::int32_t>(i, std::numeric_limits<std::int32_t>::max());
      } else {
        acc.set(i, r.a);
      }
      in.set(i, r.b);
    }
    gj::host::reduce_into(acc.data(), in.data(), n, r.t, r.op);
    for (std::size_t i = 0; i < n; ++i) {
      if (acc.get(i) != r.want) FAIL_CHECK("index " << i << " got " << acc.get(i));
    }
  }

  SECTION("bf16 NaN stays NaN, quieted, in the SIMD body and the tail") {
    std::vector<std::uint16_t> acc(37, 0x7F81), in(37, 0x3F80);  // signalling NaN + 1.0
    gj::host::reduce_into(acc.data(), in.data(), acc.size(), gjBfloat16, gjSum);
    for (std::uint16_t v : acc) CHECK(v == 0x7FC1);
  }

  SECTION("acc == in doubles every element") {
    Buf x(gjBfloat16, 100);
    for (std::size_t i = 0; i < 100; ++i) x.set(i, static_cast<double>(i));
    gj::host::reduce_into(x.data(), x.data(), 100, gjBfloat16, gjSum);
    for (std::size_t i = 0; i < 100; ++i) CHECK(x.get(i) == 2.0 * static_cast<double>(i));
  }
}

// Random bit patterns (normals, subnormals, infinities, NaNs in every lane position) through
// the SIMD body and the tail, against one element at a time: widen with the library's
// conversions (checked against the independent reference in convert_test), apply the op as
// the header defines it, round back. Bit for bit, except that when both operands are NaN the
// result need only be a NaN (which payload survives is the CPU's choice).
TEST_CASE("reduce_into and scale: f16/bf16 kernels match element-wise arithmetic on random bit patterns", "[reduce]") {
  std::uint32_t state = 12345;
  auto next16 = [&] {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return static_cast<std::uint16_t>(state >> 8);
  };
  const std::size_t n = 4099;  // many SIMD blocks and a tail
  for (gjDataType_t t : {gjBfloat16, gjFloat16}) {
    const bool bf = t == gjBfloat16;
    auto widen = [&](std::uint16_t h) { return bf ? gj::host::bf16_to_f32(h) : gj::host::f16_to_f32(h); };
    auto narrow = [&](float f) { return bf ? gj::host::f32_to_bf16(f) : gj::host::f32_to_f16(f); };
    for (gjRedOp_t op : {gjSum, gjProd, gjMin, gjMax}) {
      CAPTURE(dtype_name(t), gj::op_name(op));
      std::vector<std::uint16_t> acc(n), in(n);
      for (std::size_t i = 0; i < n; ++i) {
        acc[i] = next16();
        in[i] = next16();
      }
      const std::vector<std::uint16_t> before = acc;
      gj::host::reduce_into(acc.data(), in.data(), n, t, op);
      std::size_t wrong = 0, first = n;
      for (std::size_t i = 0; i < n; ++i) {
        const float a = widen(before[i]), b = widen(in[i]);
        const float r = op == gjSum ? a + b : op == gjProd ? a * b : op == gjMin ? (a < b ? a : b) : (a > b ? a : b);
        // One NaN operand: its payload, quieted, is the result (IEEE 754's recommendation and
        // what x86 does); two: either payload may win.
        const bool a_nan = a != a, b_nan = b != b;
        const std::uint16_t want = a_nan != b_nan && r != r ? narrow(a_nan ? a : b) : narrow(r);
        const bool ok = a_nan && b_nan ? widen(acc[i]) != widen(acc[i]) : acc[i] == want;
        if (!ok && wrong++ == 0) first = i;
      }
      INFO("first wrong index " << first << " of " << wrong);
      CHECK(wrong == 0);
    }
    for (float factor : {0.25f, 1.0f / 3.0f, 3.0f}) {  // scale: exact, inexact, overflowing
      CAPTURE(dtype_name(t), factor);
      std::vector<std::uint16_t> in(n), out(n);
      for (auto& v : in) v = next16();
      gj::host::scale(out.data(), in.data(), n, t, factor);
      std::size_t wrong = 0, first = n;
      for (std::size_t i = 0; i < n; ++i) {
        if (out[i] != narrow(widen(in[i]) * factor) && wrong++ == 0) first = i;
      }
      INFO("first wrong index " << first << " of " << wrong);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("scale multiplies floating types, rounding 16-bit results to nearest even", "[reduce]") {
  for (gjDataType_t t : {gjFloat32, gjFloat64, gjFloat16, gjBfloat16}) {
    CAPTURE(dtype_name(t));
    const std::size_t n = 2053;
    Buf in(t, n), out(t, n);
    for (std::size_t i = 0; i < n; ++i) in.set(i, static_cast<double>(i % 64) - 32);
    gj::host::scale(out.data(), in.data(), n, t, 0.25);
    for (std::size_t i = 0; i < n; ++i) {
      if (out.get(i) != in.get(i) * 0.25) FAIL("index " << i << " got " << out.get(i));
    }
    gj::host::scale(in.data(), in.data(), n, t, 2.0);  // in place
    for (std::size_t i = 0; i < n; ++i) {
      if (in.get(i) != 2.0 * (static_cast<double>(i % 64) - 32)) FAIL("in place, index " << i);
    }
  }
  // Ties after scaling: 1025 * 3 = 3075 lies between f16's 3074 and 3076 (ulp 2), 129 * 3 =
  // 387 between bf16's 386 and 388: both go to the even mantissa.
  for (auto [t, x, want] : {std::tuple{gjFloat16, 1025.0, 3076.0}, std::tuple{gjBfloat16, 129.0, 388.0}}) {
    CAPTURE(dtype_name(t));
    Buf h(t, 1), o(t, 1);
    h.set(0, x);
    gj::host::scale(o.data(), h.data(), 1, t, 3.0);
    CHECK(o.get(0) == want);
  }
}

TEST_CASE("divide truncates toward zero in the type's width", "[reduce]") {
  Buf i32(gjInt32, 4), i64(gjInt64, 2), u8(gjUint8, 2);
  const double i32_in[] = {-7, 7, -1, 2147483647.0};
  for (std::size_t i = 0; i < 4; ++i) i32.set(i, i32_in[i]);
  gj::host::divide(i32.data(), 4, gjInt32, 2);
  CHECK(i32.get(0) == -3);
  CHECK(i32.get(1) == 3);
  CHECK(i32.get(2) == 0);
  CHECK(i32.get(3) == 1073741823);
  i64.set(0, -9);
  i64.set(1, 1e15);
  gj::host::divide(i64.data(), 2, gjInt64, 4);
  CHECK(i64.get(0) == -2);
  CHECK(i64.get(1) == 2.5e14);
  u8.set(0, 255);
  u8.set(1, 3);
  gj::host::divide(u8.data(), 2, gjUint8, 4);
  CHECK(u8.get(0) == 63);
  CHECK(u8.get(1) == 0);
}

TEST_CASE("integer scaling: f64 product truncated toward zero, saturated to the type", "[scale]") {
  const std::int32_t in32[] = {5, -5, 7, 2000000000, -2000000000};
  std::int32_t out32[5] = {};
  gj::host::scale(out32, in32, 5, gjInt32, 0.5);
  CHECK(out32[0] == 2);
  CHECK(out32[1] == -2);
  CHECK(out32[2] == 3);
  gj::host::scale(out32, in32, 5, gjInt32, 2.0);
  CHECK(out32[3] == INT32_MAX);
  CHECK(out32[4] == INT32_MIN);
  std::uint8_t u8[] = {200, 3};
  gj::host::scale(u8, u8, 2, gjUint8, 1.5);  // in place
  CHECK(u8[0] == 255);
  CHECK(u8[1] == 4);
  std::int64_t i64[] = {-9, INT64_MAX};
  gj::host::scale(i64, i64, 2, gjInt64, -1.0 / 3);
  CHECK(i64[0] == 3);
  CHECK(i64[1] < 0);
}

TEST_CASE("invalid dtype, op or divisor is a gjInvalidArgument error naming the value", "[reduce]") {
  float a = 1, b = 2;
  auto code_of = [](auto&& fn) {
    try {
      fn();
    } catch (const gj::Error& e) {
      CHECK(std::string(e.what()).find('=') != std::string::npos);
      return e.code();
    }
    return gjSuccess;
  };
  CHECK(code_of([&] { gj::host::reduce_into(&a, &b, 1, gjNumDataTypes, gjSum); }) == gjInvalidArgument);
  CHECK(code_of([&] { gj::host::reduce_into(&a, &b, 1, gjFloat32, gjNumRedOps); }) == gjInvalidArgument);
  CHECK(code_of([&] { gj::host::scale(&a, &b, 1, gjInt8, 0.5); }) == gjInvalidArgument);
  CHECK(code_of([&] { gj::host::reduce_into(&a, &b, 1, gjByte, gjSum); }) == gjInvalidArgument);
  CHECK(code_of([&] { gj::host::divide(&a, 1, gjFloat32, 2); }) == gjInvalidArgument);
  CHECK(code_of([&] { gj::host::divide(&a, 1, gjInt32, 0); }) == gjInvalidArgument);
  CHECK(code_of([&] { gj::host::to_f32(&a, &b, 1, gjFloat32); }) == gjInvalidArgument);
}

TEST_CASE("copy moves every byte for lengths around the SIMD widths and leaves the rest", "[copy]") {
  for (std::size_t n : {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 4095, 4096, 65537}) {
    for (std::size_t misalign : {0, 1, 7}) {
      CAPTURE(n, misalign);
      std::vector<unsigned char> src(n + 8), dst(n + 16, 0xEE);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
      gj::host::copy(dst.data() + misalign, src.data() + 1, n);
      CHECK(std::memcmp(dst.data() + misalign, src.data() + 1, n) == 0);
      for (std::size_t i = 0; i < misalign; ++i) CHECK(dst[i] == 0xEE);
      for (std::size_t i = misalign + n; i < dst.size(); ++i) CHECK(dst[i] == 0xEE);
    }
  }
}
