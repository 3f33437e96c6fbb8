// The NCCL backend's device kernels against host references: the fused pack/unpack copy and the
// element-wise scale (f16/bf16/f32/f64) and integer divide. Skips without a CUDA device.
#include <catch2/catch.hpp>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "cuda/batched_copy.h"
#include "cuda/check.h"
#include "error.h"
#include "host/reduce.h"
#include "cuda/elementwise.h"
#include "device_buffer.h"
#include "device_skip.h"

using gj::test::cuda_ok;
using gj::test::DeviceBuffer;

namespace {

std::vector<unsigned char> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(rng());
  return v;
}

// Index of the first differing byte, or -1.
long first_difference(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return a.size() == b.size() ? -1 : static_cast<long>(std::min(a.size(), b.size()));
}

// Packs pieces of the given sizes taken at src_skew bytes past 16-byte boundaries into a buffer
// at dst_skew, unpacks them into fresh places, and checks both directions byte for byte.
void check_pack_unpack(const std::vector<std::size_t>& sizes, std::size_t src_skew, std::size_t dst_skew) {
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  std::vector<std::size_t> offsets;  // of each piece inside the source arena, 16-byte aligned + skew
  std::size_t arena = 0;
  for (std::size_t s : sizes) {
    offsets.push_back(arena + src_skew);
    arena += (s + src_skew + 15) / 16 * 16 + 16;
  }
  const auto source = random_bytes(arena, static_cast<unsigned>(total + src_skew));
  DeviceBuffer src(arena), packed(total + dst_skew), out(arena);
  src.upload(source.data(), arena);
  cuda_ok(cudaMemset(out.get(), 0, arena), "cudaMemset");

  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  std::vector<unsigned char> expect_packed;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    srcs.push_back(src.get<char>(offsets[i]));
    dsts.push_back(out.get<char>(offsets[i]));
    expect_packed.insert(expect_packed.end(), source.begin() + static_cast<long>(offsets[i]),
                         source.begin() + static_cast<long>(offsets[i] + sizes[i]));
  }
  const int n = static_cast<int>(sizes.size());
  gj::cuda::pack(packed.get<char>(dst_skew), srcs.data(), sizes.data(), n, nullptr);
  gj::cuda::unpack(dsts.data(), packed.get<char>(dst_skew), sizes.data(), n, nullptr);
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  const long bad_pack = first_difference(packed.download(total, dst_skew), expect_packed);
  INFO("pieces=" << n << " bytes=" << total << " src_skew=" << src_skew << " dst_skew=" << dst_skew);
  INFO("first wrong packed byte: " << bad_pack);
  CHECK(bad_pack == -1);
  const auto unpacked = out.download(arena);
  long bad_unpack = -1;
  for (std::size_t i = 0; i < sizes.size() && bad_unpack < 0; ++i) {
    for (std::size_t b = 0; b < sizes[i]; ++b) {
      if (unpacked[offsets[i] + b] != source[offsets[i] + b]) {
        bad_unpack = static_cast<long>(offsets[i] + b);
        break;
      }
    }
  }
  INFO("first wrong unpacked byte: " << bad_unpack);
  CHECK(bad_unpack == -1);
}

}  // namespace

TEST_CASE("pack/unpack copy every piece exactly, at every alignment") {
  const std::size_t chunk = gj::cuda::kChunkBytes;
  const std::vector<std::vector<std::size_t>> cases = {
      {1},
      {0, 3, 0},
      {16, 32, 48},
      {1, 2, 3, 15, 16, 17, 31, 33},
      {chunk - 1, chunk, chunk + 1},
      {7, 3 * chunk + 5, 2},
      {(std::size_t{8} << 20) + 3, 11, chunk},  // one large tensor among small ones
  };
  const std::size_t src_skew = GENERATE(0, 1, 2, 4, 8);
  const std::size_t dst_skew = GENERATE(0, 2, 6);
  for (const auto& sizes : cases) check_pack_unpack(sizes, src_skew, dst_skew);
}

TEST_CASE("pack/unpack at 16-byte fused offsets (odd-length f16 tensors): pieces exact, gaps untouched") {
  const std::size_t chunk = gj::cuda::kChunkBytes;
  const std::vector<std::size_t> sizes = {6, 4, 2, 0, 10, 2002, chunk + 2, 3};
  std::vector<std::size_t> at;  // grouped.h's fused_offset: the next 16-byte boundary
  std::size_t end = 0;
  for (std::size_t s : sizes) {
    at.push_back(s == 0 ? end : (end + 15) / 16 * 16);
    end = at.back() + s;
  }
  std::vector<std::size_t> src_at;
  std::size_t arena = 0;
  for (std::size_t s : sizes) {
    src_at.push_back(arena);
    arena += (s + 15) / 16 * 16 + 16;
  }
  const auto source = random_bytes(arena, 7);
  DeviceBuffer src(arena), packed(end), out(arena);
  src.upload(source.data(), arena);
  cuda_ok(cudaMemset(packed.get(), 0xab, end), "cudaMemset");
  cuda_ok(cudaMemset(out.get(), 0, arena), "cudaMemset");
  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    srcs.push_back(src.get<char>(src_at[i]));
    dsts.push_back(out.get<char>(src_at[i]));
  }
  const int n = static_cast<int>(sizes.size());
  gj::cuda::pack(packed.get(), srcs.data(), sizes.data(), at.data(), n, nullptr);
  gj::cuda::unpack(dsts.data(), packed.get(), sizes.data(), at.data(), n, nullptr);
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<unsigned char> want(end, 0xab);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    std::memcpy(want.data() + at[i], source.data() + src_at[i], sizes[i]);
  }
  CHECK(first_difference(packed.download(end), want) == -1);
  const auto unpacked = out.download(arena);
  bool ok = true;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    ok &= std::memcmp(unpacked.data() + src_at[i], source.data() + src_at[i], sizes[i]) == 0;
  }
  CHECK(ok);
}

TEST_CASE("pack/unpack with more pieces than one launch table holds") {
  std::vector<std::size_t> sizes;
  // values<int>: a first argument of type const int& would make Catch2 keep references to the
  // temporaries (kSmallTableCapacity + 1), and n would be whatever their stack slots hold later.
  const int n = GENERATE(values<int>({gj::cuda::kSmallTableCapacity, gj::cuda::kSmallTableCapacity + 1,
                                      gj::cuda::kLargeTableCapacity + 1, 2500}));
  for (int i = 0; i < n; ++i) sizes.push_back(1 + static_cast<std::size_t>(i * 37 % 300));
  check_pack_unpack(sizes, 0, 0);
  check_pack_unpack(sizes, 2, 0);
}

namespace {

template <typename T>
std::vector<T> scale_inputs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mag(-30.f, 30.f);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(std::ldexp(mag(rng) / 30.f, static_cast<int>(mag(rng) / 2)));
  return v;
}

template <typename T, typename Ref>
void check_scale(gjDataType_t dtype, Ref reference) {
  const std::size_t count = GENERATE(0, 1, 7, 8, 9, 4097, 1000003);
  const std::size_t skew = GENERATE(0, 1);  // elements: 1 = not 16-byte aligned
  const double factor = GENERATE(1.0 / 3, 1.0 / 6, 0.25);
  const auto in = scale_inputs<T>(count, static_cast<unsigned>(count));
  DeviceBuffer din((count + skew) * sizeof(T)), dout((count + skew) * sizeof(T));
  din.upload(in.data(), count * sizeof(T), skew * sizeof(T));
  gj::cuda::scale(dout.get<T>(skew * sizeof(T)), din.get<T>(skew * sizeof(T)), count, dtype, factor, nullptr);
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto got = dout.download(count * sizeof(T), skew * sizeof(T));
  long bad = -1;
  for (std::size_t i = 0; i < count && bad < 0; ++i) {
    const T want = reference(in[i], factor);
    if (std::memcmp(&want, got.data() + i * sizeof(T), sizeof(T)) != 0) bad = static_cast<long>(i);
  }
  INFO("count=" << count << " skew=" << skew << " factor=" << factor << " first wrong index=" << bad);
  CHECK(bad == -1);
}

template <typename T>
void check_divide(gjDataType_t dtype, int divisor) {
  const std::size_t count = GENERATE(1, 15, 16, 17, 100003);
  std::vector<T> in(count);
  std::mt19937 rng(static_cast<unsigned>(count));
  for (auto& x : in) x = static_cast<T>(rng());
  DeviceBuffer buf(count * sizeof(T));
  buf.upload(in.data(), count * sizeof(T));
  gj::cuda::divide(buf.get(), count, dtype, divisor, nullptr);
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto got = buf.download(count * sizeof(T));
  long bad = -1;
  for (std::size_t i = 0; i < count && bad < 0; ++i) {
    const T want = static_cast<T>(static_cast<long long>(in[i]) / divisor);  // truncation toward zero
    if (std::memcmp(&want, got.data() + i * sizeof(T), sizeof(T)) != 0) bad = static_cast<long>(i);
  }
  INFO("count=" << count << " divisor=" << divisor << " first wrong index=" << bad);
  CHECK(bad == -1);
}

}  // namespace

TEST_CASE("scale rounds like the MPI backend (f32 math, round to nearest even)") {
  SECTION("f32") {
    check_scale<float>(gjFloat32, [](float x, double f) { return x * static_cast<float>(f); });
  }
  SECTION("f64") { check_scale<double>(gjFloat64, [](double x, double f) { return x * f; }); }
  SECTION("f16") {
    check_scale<__half>(gjFloat16, [](__half x, double f) {
      return __float2half_rn(__half2float(x) * static_cast<float>(f));
    });
  }
  SECTION("bf16") {
    check_scale<__nv_bfloat16>(gjBfloat16, [](__nv_bfloat16 x, double f) {
      return __float2bfloat16_rn(__bfloat162float(x) * static_cast<float>(f));
    });
  }
}

TEST_CASE("divide truncates toward zero in the type's width") {
  const int divisor = GENERATE(1, 3, 4, 7, 300);
  SECTION("i32") { check_divide<std::int32_t>(gjInt32, divisor); }
  SECTION("i64") { check_divide<std::int64_t>(gjInt64, divisor); }
  SECTION("u8") { check_divide<std::uint8_t>(gjUint8, divisor); }
}

namespace {

// The device's integer scaling against the MPI backend's (host/reduce.h): both truncate toward
// zero and saturate, so they agree bit for bit, also where the product leaves the type's range.
template <typename T>
void check_scale_int_like_host(gjDataType_t dtype, const std::vector<T>& in, double factor) {
  DeviceBuffer d(in.size() * sizeof(T));
  d.upload(in.data(), in.size() * sizeof(T));
  gj::cuda::scale(d.get(), d.get(), in.size(), dtype, factor, nullptr);
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<T> got(in.size()), want(in.size());
  const auto raw = d.download(in.size() * sizeof(T));
  std::memcpy(got.data(), raw.data(), raw.size());
  gj::host::scale(want.data(), in.data(), in.size(), dtype, factor);
  for (std::size_t i = 0; i < in.size(); ++i) {
    INFO("dtype=" << dtype << " factor=" << factor << " index=" << i << " in=" << static_cast<long long>(in[i]));
    CHECK(static_cast<long long>(got[i]) == static_cast<long long>(want[i]));
  }
}

}  // namespace

TEST_CASE("integer scaling saturates like the host backend (no out-of-range conversion)") {
  const std::vector<std::uint8_t> u8{0, 1, 2, 100, 127, 128, 200, 255};
  for (double f : {-1.0, -0.5, 0.5, 1.5, 2.0, 300.0}) check_scale_int_like_host<std::uint8_t>(gjUint8, u8, f);
  const std::vector<std::int32_t> i32{0, 1, -1, 1 << 30, -(1 << 30), 2147483647, -2147483647 - 1};
  for (double f : {-1.0, 2.0, 0.5, 1e10}) check_scale_int_like_host<std::int32_t>(gjInt32, i32, f);
}

TEST_CASE("int64 beyond 2^53 scales through f64 on the device exactly as on the host") {
  // 2^53 + 1 is not a double: both backends round it to 2^53 before multiplying (docs/gpu.md).
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const std::vector<std::int64_t> i64{big, -big, (std::int64_t{1} << 62) + 3, INT64_MAX, INT64_MIN};
  for (double f : {1.0, 2.0, 0.5, -1.0}) check_scale_int_like_host<std::int64_t>(gjInt64, i64, f);
}

TEST_CASE("a failed CUDA call is reported once, not again by the next launch check") {
  const gjResult_t failed = [] {
    try {
      gj::cuda::check(cudaSetDevice(1 << 20), "cudaSetDevice(1<<20)");
    } catch (const gj::Error& e) {
      return e.code();
    }
    return gjSuccess;
  }();
  REQUIRE(failed == gjCudaError);
  DeviceBuffer d(64 * sizeof(float));
  std::vector<float> ones(64, 1.0f);
  d.upload(ones.data(), ones.size() * sizeof(float));
  CHECK_NOTHROW(gj::cuda::scale(d.get(), d.get(), 64, gjFloat32, 2.0, nullptr));
  cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// main() is Catch2's (Catch2::Catch2WithMain, prebuilt): without a device the program ends with
// ctest's skip code while statics are constructed, before main runs any test.
namespace {
[[maybe_unused]] const bool kDevicePresent = [] {
  if (gj::test::skip_without_devices(1, "gpu_kernels")) std::exit(gj::test::kSkip);
  return true;
}();
}  // namespace
