// The emulated CUDA runtime's rules where the real runtime is strict (docs/gpu.md, "Emulation"):
// these say the emulation refuses what the real runtime refuses, so that the library's tests
// against it can fail where the library would fail on a GPU. One process: the cases run in order
// (contexts are per process and first).
#include <catch2/catch.hpp>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cuda_emu.h"

namespace {

using Clock = std::chrono::steady_clock;

// A stream task that holds its stream until released.
struct Gate {
  std::atomic<bool> open{false};
  void hold(cudaStream_t s) {
    REQUIRE(gjemu::launch(s, [this] { while (!open.load()) std::this_thread::yield(); }, "gate") == cudaSuccess);
  }
};

template <typename F>
F driver(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  REQUIRE(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) == cudaSuccess);
  REQUIRE(q == cudaDriverEntryPointSuccess);
  return reinterpret_cast<F>(fn);
}

}  // namespace

TEST_CASE("contexts: created by the calls that need one, on the current device, and counted") {
  int device = -1, n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  CHECK(gjemu::context_devices().empty());  // neither query creates one
  auto state = driver<CUresult (*)(CUdevice, unsigned int*, int*)>("cuDevicePrimaryCtxGetState");
  auto attr = driver<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  int host = 0;
  unsigned int type = 0;
  CHECK(attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(&host)) == CUDA_ERROR_INVALID_VALUE);
  CHECK(gjemu::context_devices().empty());  // the driver's pointer query needs none
  cudaPointerAttributes a{};
  REQUIRE(cudaPointerGetAttributes(&a, &host) == cudaSuccess);  // host memory, device 0 current
  CHECK(gjemu::context_devices() == std::vector<int>{0});
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  CHECK(gjemu::context_devices() == std::vector<int>{0, 1});
  unsigned int flags = 0;
  int active = 0;
  CHECK(state(1, &flags, &active) == CUDA_SUCCESS);
  CHECK(active == 1);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("not ready from a query is the thread's last error") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t e = nullptr;
  REQUIRE(cudaEventCreate(&e) == cudaSuccess);
  Gate gate;
  gate.hold(s);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  (void)cudaGetLastError();
  CHECK(cudaEventQuery(e) == cudaErrorNotReady);
  CHECK(cudaGetLastError() == cudaErrorNotReady);
  CHECK(cudaGetLastError() == cudaSuccess);  // read and cleared
  CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
  CHECK(cudaPeekAtLastError() == cudaErrorNotReady);
  gate.open = true;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  (void)cudaGetLastError();
  (void)cudaEventDestroy(e);
  (void)cudaStreamDestroy(s);
}

TEST_CASE("the legacy stream waits for blocking streams, and they for it; non-blocking ones are exempt") {
  cudaStream_t blocking = nullptr, nonblocking = nullptr;
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking) == cudaSuccess);
  Gate gate;
  gate.hold(blocking);
  std::atomic<bool> legacy_ran{false}, other_ran{false};
  REQUIRE(gjemu::launch(nullptr, [&] { legacy_ran = true; }, "legacy") == cudaSuccess);
  REQUIRE(gjemu::launch(nonblocking, [&] { other_ran = true; }, "nonblocking") == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(nonblocking) == cudaSuccess);
  CHECK(other_ran.load());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(legacy_ran.load());  // behind the blocking stream's held work
  gate.open = true;
  REQUIRE(cudaStreamSynchronize(nullptr) == cudaSuccess);
  CHECK(legacy_ran.load());
  // The other way: a blocking stream's new work waits for the legacy stream's earlier work.
  Gate legacy_gate;
  legacy_gate.hold(nullptr);
  std::atomic<bool> after{false};
  REQUIRE(gjemu::launch(blocking, [&] { after = true; }, "after legacy") == cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(after.load());
  legacy_gate.open = true;
  REQUIRE(cudaStreamSynchronize(blocking) == cudaSuccess);
  CHECK(after.load());
  (void)cudaStreamDestroy(blocking);
  (void)cudaStreamDestroy(nonblocking);
}

TEST_CASE("cudaFree synchronizes the device; cudaMalloc fails while others hold the memory (1 MiB here)") {
  void* held = nullptr;
  REQUIRE(cudaMalloc(&held, 768 << 10) == cudaSuccess);
  void* more = nullptr;
  CHECK(cudaMalloc(&more, 512 << 10) == cudaErrorMemoryAllocation);
  CHECK(cudaMallocAsync(&more, 512 << 10, nullptr) == cudaErrorMemoryAllocation);
  (void)cudaGetLastError();
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  Gate gate;
  gate.hold(s);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate.open = true;
  });
  const auto t0 = Clock::now();
  REQUIRE(cudaFree(held) == cudaSuccess);  // waits for the unrelated stream's held work
  CHECK(Clock::now() - t0 >= std::chrono::milliseconds(150));
  opener.join();
  REQUIRE(cudaMalloc(&more, 512 << 10) == cudaSuccess);
  // cudaFreeAsync: in stream order, without waiting for other streams.
  Gate again;
  cudaStream_t other = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking) == cudaSuccess);
  again.hold(other);
  const auto t1 = Clock::now();
  REQUIRE(cudaFreeAsync(more, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(Clock::now() - t1 < std::chrono::milliseconds(150));
  again.open = true;
  REQUIRE(cudaStreamSynchronize(other) == cudaSuccess);
  (void)cudaStreamDestroy(s);
  (void)cudaStreamDestroy(other);
}

TEST_CASE("querying a capturing stream is refused and invalidates the capture") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  cudaStreamCaptureMode relaxed = cudaStreamCaptureModeRelaxed;
  REQUIRE(cudaThreadExchangeStreamCaptureMode(&relaxed) == cudaSuccess);  // even a relaxed thread
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  (void)cudaThreadExchangeStreamCaptureMode(&relaxed);
  (void)cudaGetLastError();
  (void)cudaStreamDestroy(s);
}
