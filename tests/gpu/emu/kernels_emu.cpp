// The device kernels of collectives/src/cuda (elementwise.h, batched_copy.h) for the emulated
// device runtime: the same element logic (elementwise_ops.h, batched_copy_ops.h) applied by a
// host task enqueued on the emulated stream, with the same launch check as the CUDA launches
// (cudaGetLastError after the launch), so a stale error is reported here as it would be there.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "../../../collectives/src/cuda/batched_copy.h"
#include "../../../collectives/src/cuda/batched_copy_ops.h"
#include "../../../collectives/src/cuda/check.h"
#include "../../../collectives/src/cuda/elementwise.h"
#include "../../../collectives/src/cuda/elementwise_ops.h"
#include "../../../collectives/src/error.h"
#include "cuda_emu.h"

namespace gj::cuda {
namespace {

template <typename T, typename F>
void map(const void* in_v, void* out_v, std::size_t count, F f, void* stream, const char* what) {
  if (count == 0) return;
  const auto* in = static_cast<const T*>(in_v);
  auto* out = static_cast<T*>(out_v);
  (void)gjemu::launch(static_cast<cudaStream_t>(stream), [=] {
    for (std::size_t i = 0; i < count; ++i) out[i] = f(in[i]);
  }, what);
  check(cudaGetLastError(), std::string(what) + "<<<emulated>>>(count=" + std::to_string(count) + ")");
}

}  // namespace

void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double factor, void* stream) {
  const auto f = static_cast<float>(factor);
  switch (dtype) {
    case gjFloat32: return map<float>(in, out, count, ScaleF32{f}, stream, "scale_f32");
    case gjFloat64: return map<double>(in, out, count, ScaleF64{factor}, stream, "scale_f64");
    case gjFloat16: return map<__half>(in, out, count, ScaleF16{f}, stream, "scale_f16");
    case gjBfloat16: return map<__nv_bfloat16>(in, out, count, ScaleBf16{f}, stream, "scale_bf16");
    case gjInt32: return map<std::int32_t>(in, out, count, ScaleInt<std::int32_t>{factor}, stream, "scale_i32");
    case gjInt64: return map<std::int64_t>(in, out, count, ScaleInt<std::int64_t>{factor}, stream, "scale_i64");
    case gjUint8: return map<std::uint8_t>(in, out, count, ScaleInt<std::uint8_t>{factor}, stream, "scale_u8");
    default:
      throw Error(gjInternalError, "gj::cuda::scale(dtype=" + std::to_string(dtype) + "): not a reducible type");
  }
}

void divide(void* buf, std::size_t count, gjDataType_t dtype, int divisor, void* stream) {
  if (divisor < 1) throw Error(gjInternalError, "gj::cuda::divide(divisor=" + std::to_string(divisor) + ")");
  switch (dtype) {
    case gjInt32: return map<std::int32_t>(buf, buf, count, Divide<std::int32_t>{divisor}, stream, "divide_i32");
    case gjInt64: return map<std::int64_t>(buf, buf, count, Divide<std::int64_t>{divisor}, stream, "divide_i64");
    case gjUint8: return map<std::uint8_t>(buf, buf, count, Divide<std::uint8_t>{divisor}, stream, "divide_u8");
    default:
      throw Error(gjInternalError, "gj::cuda::divide(dtype=" + std::to_string(dtype) + "): not an integer type");
  }
}

void batched_copy(const CopyPiece* pieces, std::size_t n, void* stream) {
  for (const CopyLaunch& l : plan_copy_launches(pieces, n, kLargeTableCapacity)) {
    (void)gjemu::launch(static_cast<cudaStream_t>(stream), [l] {
      for (unsigned long long c = 0; c < l.total_chunks; ++c) {
        const ChunkRange r = locate_chunk(l.entries.data(), static_cast<int>(l.entries.size()), c);
        const CopyEntry& e = l.entries[static_cast<std::size_t>(r.entry)];
        const auto* s = static_cast<const char*>(e.src);
        auto* d = static_cast<char*>(e.dst);
        for (std::size_t b = r.begin; b < r.end; ++b) d[b] = s[b];
      }
    }, "batched_copy");
    check(cudaGetLastError(), "batched_copy<<<emulated>>>(pieces=" + std::to_string(l.entries.size()) +
                                  ", chunks=" + std::to_string(l.total_chunks) + ")");
  }
}

}  // namespace gj::cuda
