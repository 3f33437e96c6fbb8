// The NCCL backend's operations beyond allreduce/broadcast, on the backend itself (the C API
// layer of these operations is the collectives' API work), under mpiexec with one GPU per rank
// (or several ranks per GPU with NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1):
//   allgather (equal counts) and allgatherv (per-rank counts, byte dtypes), reduce-scatter (equal
//   and per-rank counts, avg with scaling), allreduce with prescale/postscale, broadcast of gjBool,
//   a bad root refused before NCCL (gjInvalidArgument) leaving the communicator usable, a buffer on
//   another device rejected, growing a buffer during CUDA graph capture of the caller's
//   non-blocking stream refused with gjInvalidUsage.
// Inputs are small integers, so every result is exact and compared for equality.
// Exit codes: 0 pass, 1 wrong behaviour (printed), 77 skipped (not enough devices).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "backend_settings.h"
#include "config.h"
#include "device_buffer.h"
#include "device_skip.h"
#include "error.h"
#include "expect.h"
#include "gpu_rank.h"
#include "nccl/nccl_backend.h"

namespace {

using gj::test::DeviceBuffer;

using gj::test::expect;

template <typename T>
std::vector<T> down(const DeviceBuffer& b, std::size_t n) {
  std::vector<T> out(n);
  const auto raw = b.download(n * sizeof(T));
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

template <typename T>
void up(DeviceBuffer& b, const std::vector<T>& v) {
  b.upload(v.data(), v.size() * sizeof(T));
}

gjResult_t code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const gj::Error& e) {
    if (message != nullptr) *message = e.what();
    return e.code();
  }
  return gjSuccess;
}

void sync(cudaStream_t s) { gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize"); }

void allgather_cases(gj::Backend& be, int rank, int size, cudaStream_t s) {
  // Equal counts, f32.
  const std::size_t n = 1000;
  DeviceBuffer send(n * 4), recv(n * 4 * static_cast<std::size_t>(size));
  std::vector<float> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(rank * 10000 + static_cast<int>(i));
  up(send, mine);
  std::vector<std::size_t> counts(static_cast<std::size_t>(size), n);
  be.allgatherv(send.get(), recv.get(), counts.data(), gjFloat32, s);
  sync(s);
  const auto all = down<float>(recv, n * static_cast<std::size_t>(size));
  bool ok = true;
  for (int r = 0; r < size; ++r)
    for (std::size_t i = 0; i < n; ++i) ok &= all[static_cast<std::size_t>(r) * n + i] == static_cast<float>(r * 10000 + static_cast<int>(i));
  expect(ok, "allgather equal counts f32");

  // Per-rank counts r + 1 (rank 1 sends nothing when size > 2), gjInt16 and gjByte.
  std::vector<std::size_t> per(static_cast<std::size_t>(size));
  std::size_t total = 0;
  for (int r = 0; r < size; ++r) total += per[static_cast<std::size_t>(r)] = (r == 1 && size > 2) ? 0 : static_cast<std::size_t>(r + 1);
  for (gjDataType_t dt : {gjInt16, gjByte}) {
    const std::size_t es = dt == gjInt16 ? 2 : 1;
    DeviceBuffer sv(per[static_cast<std::size_t>(rank)] * es + 1), rv(total * es + 1);
    std::vector<unsigned char> bytes(per[static_cast<std::size_t>(rank)] * es);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(rank * 31 + i);
    if (!bytes.empty()) sv.upload(bytes.data(), bytes.size());
    be.allgatherv(sv.get(), rv.get(), per.data(), dt, s);
    sync(s);
    const auto got = rv.download(total * es);
    std::size_t off = 0;
    bool same = true;
    for (int r = 0; r < size; ++r) {
      for (std::size_t i = 0; i < per[static_cast<std::size_t>(r)] * es; ++i) same &= got[off + i] == static_cast<unsigned char>(r * 31 + i);
      off += per[static_cast<std::size_t>(r)] * es;
    }
    expect(same, std::string("allgatherv per-rank counts, dtype=") + std::to_string(dt));
  }
}

void reduce_scatter_cases(gj::Backend& be, int rank, int size, cudaStream_t s) {
  // Equal counts, f32 sum: element i of every rank's input is r + i % 7.
  const std::size_t n = 513;
  const std::size_t total = n * static_cast<std::size_t>(size);
  DeviceBuffer send(total * 4), recv(n * 4);
  std::vector<float> in(total);
  for (std::size_t i = 0; i < total; ++i) in[i] = static_cast<float>(rank + static_cast<int>(i % 7));
  up(send, in);
  std::vector<std::size_t> counts(static_cast<std::size_t>(size), n);
  be.reduce_scatter(send.get(), recv.get(), counts.data(), gjFloat32, gjSum, gj::Scale{}, s);
  sync(s);
  auto out = down<float>(recv, n);
  const int rank_sum = size * (size - 1) / 2;
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t g = static_cast<std::size_t>(rank) * n + i;
    ok &= out[i] == static_cast<float>(rank_sum + size * static_cast<int>(g % 7));
  }
  expect(ok, "reduce-scatter equal counts f32 sum");

  // Per-rank counts, i32 avg with prescale 2 and postscale 3: ((sum of 2x) / size) * 3.
  std::vector<std::size_t> per(static_cast<std::size_t>(size));
  std::size_t t = 0;
  for (int r = 0; r < size; ++r) t += per[static_cast<std::size_t>(r)] = static_cast<std::size_t>(3 * r + 2);
  DeviceBuffer s2(t * 4), r2(per[static_cast<std::size_t>(rank)] * 4);
  std::vector<std::int32_t> v(t);
  for (std::size_t i = 0; i < t; ++i) v[i] = static_cast<std::int32_t>(10 * rank + static_cast<int>(i));
  up(s2, v);
  be.reduce_scatter(s2.get(), r2.get(), per.data(), gjInt32, gjAvg, gj::Scale{2.0, 3.0}, s);
  sync(s);
  const auto got = down<std::int32_t>(r2, per[static_cast<std::size_t>(rank)]);
  std::size_t off = 0;
  for (int r = 0; r < rank; ++r) off += per[static_cast<std::size_t>(r)];
  bool same = true;
  for (std::size_t i = 0; i < got.size(); ++i) {
    long long sum = 0;
    for (int r = 0; r < size; ++r) sum += 2LL * (10 * r + static_cast<long long>(off + i));
    same &= got[i] == static_cast<std::int32_t>(sum / size * 3);
  }
  expect(same, "reduce-scatter per-rank counts i32 avg, prescale 2, postscale 3");
}

void scaled_and_broadcast_cases(gj::Backend& be, int rank, int size, cudaStream_t s) {
  const std::size_t n = 4099;
  DeviceBuffer buf(n * 4);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(2 * (rank + static_cast<int>(i % 5)));
  up(buf, v);
  be.allreduce_scaled(buf.get(), buf.get(), n, gjFloat32, gjSum, gj::Scale{0.5, 4.0}, s);
  sync(s);
  const auto out = down<float>(buf, n);
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) {
    const int sum = size * (size - 1) / 2 + size * static_cast<int>(i % 5);
    ok &= out[i] == static_cast<float>(4 * sum);
  }
  expect(ok, "allreduce_scaled f32 sum, prescale 0.5, postscale 4 (in place)");

  DeviceBuffer flags(33);
  std::vector<unsigned char> f(33, 0);
  if (rank == size - 1)
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<unsigned char>(i % 3 == 0);
  flags.upload(f.data(), f.size());
  be.broadcast(flags.get(), 33, gjBool, size - 1, s);
  sync(s);
  const auto g = flags.download(33);
  bool same = true;
  for (std::size_t i = 0; i < g.size(); ++i) same &= g[i] == static_cast<unsigned char>(i % 3 == 0);
  expect(same, "broadcast gjBool from the last rank");
}

void failure_cases(gj::Backend& be, int rank, int size, cudaStream_t s) {
  // A bad root is refused before NCCL sees it (NCCL's own refusal would abort a nonblocking
  // communicator): gjInvalidArgument naming the root, and the communicator stays usable.
  DeviceBuffer buf(64);
  std::string msg;
  const gjResult_t bad = code_of([&] { be.broadcast(buf.get(), 16, gjFloat32, size + 5, s); }, &msg);
  expect(bad == gjInvalidArgument && msg.find("root=" + std::to_string(size + 5)) != std::string::npos,
         "bad root: gjInvalidArgument naming the root, got " + std::to_string(bad) + ": " + msg);
  const gjResult_t after = code_of([&] { be.allreduce(buf.get(), buf.get(), 16, gjFloat32, gjSum, s); sync(s); });
  expect(after == gjSuccess, "an allreduce after the local error succeeds, got " + std::to_string(after));

  // A buffer on another device.
  int devices = 1, current = 0;
  gj::test::cuda_ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  gj::test::cuda_ok(cudaGetDevice(&current), "cudaGetDevice");
  if (devices > 1) {
    gj::test::cuda_ok(cudaSetDevice((current + 1) % devices), "cudaSetDevice(other)");
    void* other = nullptr;
    gj::test::cuda_ok(cudaMalloc(&other, 64), "cudaMalloc(other device)");
    gj::test::cuda_ok(cudaSetDevice(current), "cudaSetDevice(back)");
    const gjResult_t wrong = code_of([&] { be.allreduce(other, other, 16, gjFloat32, gjSum, s); }, &msg);
    expect(wrong == gjInvalidArgument && msg.find("device") != std::string::npos,
           "buffer on another device: gjInvalidArgument, got " + std::to_string(wrong) + ": " + msg);
    (void)cudaFree(other);
  } else if (rank == 0) {
    std::printf("note: one device: the other-device check is not exercised\n");
  }

  // Growing the fusion buffer during capture of the caller's non-blocking stream (as torch's):
  // refused, nothing allocated. (Local: no NCCL call.)
  cudaStream_t cap = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking), "cudaStreamCreate");
  gj::test::cuda_ok(cudaStreamBeginCapture(cap, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  const gjResult_t in_capture = code_of([&] { (void)be.fusion_buffer(std::size_t{1} << 30, cap); }, &msg);
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(cap, &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaStreamDestroy(cap);
  expect(in_capture == gjInvalidUsage && msg.find("capture") != std::string::npos,
         "fusion buffer growth during capture: gjInvalidUsage, got " + std::to_string(in_capture) + ": " + msg);
}

}  // namespace

int main() {
  int world = 1;
  if (const char* v = std::getenv("OMPI_COMM_WORLD_SIZE")) world = std::atoi(v);
  if (gj::test::skip_without_devices(world, "gpu_nccl_ops")) return gj::test::kSkip;
  const gj::test::MpiRank me = gj::test::init_mpi_rank();
  const int rank = me.rank, size = me.size;
  gj::test::g_rank = rank;
  {
    gj::Config config = gj::test::settings();
    config.timeout_ms = 60000;
    auto be = gj::make_nccl_backend(MPI_COMM_WORLD, me.device, config);
    cudaStream_t s = nullptr;
    gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    try {
      allgather_cases(*be, rank, size, s);
      reduce_scatter_cases(*be, rank, size, s);
      scaled_and_broadcast_cases(*be, rank, size, s);
      failure_cases(*be, rank, size, s);
    } catch (const std::exception& e) {
      expect(false, std::string("unexpected exception: ") + e.what());
    }
    (void)cudaStreamDestroy(s);
  }
  const int all = gj::test::failures_on_all_ranks();
  if (rank == 0) std::printf("%s: gpu_nccl_ops, %d ranks, %d failures\n", all == 0 ? "PASS" : "FAIL", size, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
