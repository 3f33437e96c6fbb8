// The NCCL backend on 2 ranks where the real CUDA runtime and NCCL are strict (docs/gpu.md,
// "Emulation"): each case fails if the backend relies on something they do not grant.
//   not_ready   a request queried while its stream is busy ("not ready", which the runtime keeps
//               as the thread's last error), then a kernel launch: the launch check must not
//               report the stale "not ready" as its own failure.
//   stream      an allreduce on a stream of another device: gjInvalidArgument naming the stream,
//               before NCCL (NCCL would fail it and the communicator would be aborted); the
//               next allreduce on the right stream is exact.
//   grow        growing the fusion buffer while an unrelated stream of the device is stalled:
//               returns at once (no device-wide synchronization by cudaFree) and the grown
//               buffer reduces exactly.
//   oom         (the emulation only, GJ_EMU_DEVICE_MEMORY set) another allocator holds the
//               device's memory: growing fails with gjCudaError naming GJ_COLL_FUSION_BYTES and
//               PyTorch's cache; the communicator stays usable once the memory is released.
// Exit codes: 0 pass, 1 wrong behaviour (printed), 77 skipped (fewer than 2 devices).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backend_settings.h"
#include "config.h"
#include "device_buffer.h"
#include "device_skip.h"
#include "error.h"
#include "expect.h"
#include "gpu_rank.h"
#include "nccl/nccl_backend.h"
#include "stall_kernel.h"

namespace {

using gj::test::expect;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A host-mapped flag that a stall kernel spins on until it is set.
struct Flag {
  int* host = nullptr;
  int* dev = nullptr;
  Flag() {
    gj::test::cuda_ok(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
    *host = 0;
    gj::test::cuda_ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0), "cudaHostGetDevicePointer");
  }
  ~Flag() { (void)cudaFreeHost(host); }
  void release() { __atomic_store_n(host, 1, __ATOMIC_SEQ_CST); }
};

void fill(gj::test::DeviceBuffer& b, std::size_t count, float v) {
  std::vector<float> h(count, v);
  b.upload(h.data(), count * sizeof(float));
}

bool all_equal(const gj::test::DeviceBuffer& b, std::size_t count, float v) {
  const auto bytes = b.download(count * sizeof(float));
  const auto* f = reinterpret_cast<const float*>(bytes.data());
  for (std::size_t i = 0; i < count; ++i)
    if (f[i] != v) return false;
  return true;
}

std::string call(const std::function<void()>& f, gjResult_t* code) {
  *code = gjSuccess;
  try {
    f();
  } catch (const gj::Error& e) {
    *code = e.code();
    return e.what();
  }
  return "";
}

void not_ready(gj::Backend& be, int rank, cudaStream_t s) {
  Flag flag;
  gj::test::DeviceBuffer buf(1024 * sizeof(float));
  fill(buf, 1024, 1.0f);
  if (rank == 1) gj::test::cuda_ok(gj::test::launch_stall(flag.dev, s), "launch_stall");
  be.allreduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, s);  // pending on both ranks
  void* request = be.record_completion(s);
  gjResult_t code = gjSuccess;
  bool done = true;
  std::string msg = call([&] { done = be.completion_done(request); }, &code);
  expect(code == gjSuccess && !done, "not_ready: a request behind a stalled stream is not done yet (" + msg + ")");
  MPI_Barrier(MPI_COMM_WORLD);
  flag.release();
  msg = call([&] { be.completion_wait(request); }, &code);
  expect(code == gjSuccess, "not_ready: the request completes once the stall ends: " + msg);
  be.completion_release(request);
  // A scaled allreduce launches the prescale kernel, whose launch check reads the last error.
  msg = call([&] { be.allreduce_scaled(buf.get(), buf.get(), 1024, gjFloat32, gjSum, gj::Scale{0.5, 1.0}, s); },
             &code);
  expect(code == gjSuccess, "not_ready: the kernel launch after a not-ready query succeeds, got " +
                                std::to_string(code) + ": " + msg);
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (code == gjSuccess) expect(all_equal(buf, 1024, 2.0f), "not_ready: (2 x 1) x 0.5 summed over 2 ranks = 2");
}

void wrong_stream(gj::Backend& be, int device, cudaStream_t s) {
  const int other = 1 - device;
  cudaStream_t foreign = nullptr;
  gj::test::cuda_ok(cudaSetDevice(other), "cudaSetDevice(other)");
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&foreign, cudaStreamNonBlocking), "cudaStreamCreate(other device)");
  gj::test::cuda_ok(cudaSetDevice(device), "cudaSetDevice(own)");
  gj::test::DeviceBuffer buf(256 * sizeof(float));
  fill(buf, 256, 3.0f);
  gjResult_t code = gjSuccess;
  const std::string msg = call([&] { be.allreduce(buf.get(), buf.get(), 256, gjFloat32, gjSum, foreign); }, &code);
  expect(code == gjInvalidArgument && msg.find("stream") != std::string::npos &&
             msg.find("device " + std::to_string(other)) != std::string::npos,
         "stream: a stream of device " + std::to_string(other) + " is gjInvalidArgument naming it, got " +
             std::to_string(code) + ": " + msg);
  const std::string next = call([&] { be.allreduce(buf.get(), buf.get(), 256, gjFloat32, gjSum, s); }, &code);
  expect(code == gjSuccess, "stream: the communicator is still usable after the refusal: " + next);
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  if (code == gjSuccess) expect(all_equal(buf, 256, 6.0f), "stream: the next allreduce is exact");
  (void)cudaStreamDestroy(foreign);
}

void grow(gj::Backend& be, cudaStream_t s) {
  constexpr std::size_t kSmall = 1024, kLarge = 1 << 18;  // floats
  auto* fb = static_cast<float*>(be.fusion_buffer(kSmall * sizeof(float), s));
  std::vector<float> ones(kLarge, 1.0f);
  gj::test::cuda_ok(cudaMemcpyAsync(fb, ones.data(), kSmall * sizeof(float), cudaMemcpyHostToDevice, s), "H2D");
  be.allreduce(fb, fb, kSmall, gjFloat32, gjSum, s);
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  MPI_Barrier(MPI_COMM_WORLD);

  // Another user of the device (torch's compute stream, another communicator) is busy.
  Flag flag;
  cudaStream_t busy = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking), "cudaStreamCreate(busy)");
  gj::test::cuda_ok(gj::test::launch_stall(flag.dev, busy), "launch_stall");
  std::thread release([&] {  // bounds the test on a backend that does wait for the device
    std::this_thread::sleep_for(std::chrono::seconds(5));
    flag.release();
  });
  const auto t0 = Clock::now();
  gjResult_t code = gjSuccess;
  float* grown = nullptr;
  const std::string msg = call([&] { grown = static_cast<float*>(be.fusion_buffer(kLarge * sizeof(float), s)); }, &code);
  const double secs = since(t0);
  expect(code == gjSuccess, "grow: growing the fusion buffer succeeds: " + msg);
  expect(secs < 1.0, "grow: growing the fusion buffer does not wait for an unrelated busy stream (took " +
                         std::to_string(secs) + " s)");
  if (code == gjSuccess) {
    gj::test::cuda_ok(cudaMemcpyAsync(grown, ones.data(), kLarge * sizeof(float), cudaMemcpyHostToDevice, s), "H2D");
    be.allreduce(grown, grown, kLarge, gjFloat32, gjSum, s);
    std::vector<float> out(kLarge);
    gj::test::cuda_ok(cudaMemcpyAsync(out.data(), grown, kLarge * sizeof(float), cudaMemcpyDeviceToHost, s), "D2H");
    gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    bool exact = true;
    for (float v : out) exact = exact && v == 2.0f;
    expect(exact, "grow: the grown fusion buffer reduces exactly");
  }
  release.join();
  gj::test::cuda_ok(cudaStreamSynchronize(busy), "cudaStreamSynchronize(busy)");
  (void)cudaStreamDestroy(busy);
}

void out_of_memory(gj::Backend& be, cudaStream_t s) {
  const char* capacity = std::getenv("GJ_EMU_DEVICE_MEMORY");
  // Only the emulation's memory (GJ_EMU_DEVICES marks it) can be filled on purpose.
  if (capacity == nullptr || std::getenv("GJ_EMU_DEVICES") == nullptr) return;
  const std::size_t total = std::strtoull(capacity, nullptr, 10);
  void* hold = nullptr;  // another allocator's cache
  gj::test::cuda_ok(cudaMalloc(&hold, total - (std::size_t{8} << 20)), "cudaMalloc(hold)");
  gjResult_t code = gjSuccess;
  std::string msg = call([&] { (void)be.fusion_buffer(std::size_t{64} << 20, s); }, &code);
  expect(code == gjCudaError && msg.find("GJ_COLL_FUSION_BYTES") != std::string::npos &&
             msg.find("empty_cache") != std::string::npos,
         "oom: growth while another allocator holds the memory: gjCudaError naming the fixes, got " +
             std::to_string(code) + ": " + msg);
  gj::test::cuda_ok(cudaFree(hold), "cudaFree(hold)");
  MPI_Barrier(MPI_COMM_WORLD);
  gj::test::DeviceBuffer buf(64 * sizeof(float));
  fill(buf, 64, 1.0f);
  msg = call([&] { be.allreduce(buf.get(), buf.get(), 64, gjFloat32, gjSum, s); }, &code);
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  expect(code == gjSuccess && all_equal(buf, 64, 2.0f), "oom: the communicator is usable afterwards: " + msg);
}

}  // namespace

int main() {
  if (gj::test::skip_without_devices(2, "gpu_nccl_strict")) return gj::test::kSkip;
  const gj::test::MpiRank me = gj::test::init_mpi_rank();
  gj::test::g_rank = me.rank;
  {
    gj::Config config = gj::test::settings();
    config.timeout_ms = 60000;
    auto be = gj::make_nccl_backend(MPI_COMM_WORLD, me.device, config);
    cudaStream_t s = nullptr;
    gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    not_ready(*be, me.rank, s);
    MPI_Barrier(MPI_COMM_WORLD);
    wrong_stream(*be, me.device, s);
    MPI_Barrier(MPI_COMM_WORLD);
    grow(*be, s);
    MPI_Barrier(MPI_COMM_WORLD);
    out_of_memory(*be, s);
    gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    (void)cudaStreamDestroy(s);
  }
  const int all = gj::test::failures_on_all_ranks();
  if (me.rank == 0) std::printf("%s: gpu_nccl_strict, %d failures\n", all == 0 ? "PASS" : "FAIL", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
