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

// Enqueues map<T> over (in, out, count) for dispatch_scale / dispatch_divide.
struct Launch {
  const void* in;
  void* out;
  std::size_t count;
  void* stream;
  template <typename T, typename F>
  void run(F f, const char* what) const {
    map<T>(in, out, count, f, stream, what);
  }
};

}  // namespace

void scale(void* out, const void* in, std::size_t count, gjDataType_t dtype, double factor, void* stream) {
  dispatch_scale(dtype, factor, Launch{in, out, count, stream});
}

void divide(void* buf, std::size_t count, gjDataType_t dtype, int divisor, void* stream) {
  dispatch_divide(dtype, divisor, Launch{buf, buf, count, stream});
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
