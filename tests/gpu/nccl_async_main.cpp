// A nonblocking call on device buffers waits for no peer (issue 52), through the public API on
// 2 ranks, rank 1 arriving 1 s late each time:
//   first    rank 0's first device call (it creates the NCCL communicator) returns in < 50 ms;
//   behind   a device gjIallReduce issued behind a pending host gjIallReduce returns in < 50 ms;
//   checked  with the agreement check on for every call (gjCommSetCheck 1), likewise;
//   overlap  while the collective waits for rank 1, rank 0's own stream is free: a copy queued
//            on it after the call completes within 300 ms (communication runs on the library's
//            stream, not the caller's);
//   producer the collective reads what the caller's stream produced before the call: the input
//            is written by a copy queued behind a stalled kernel, released 200 ms after the call.
// Against the emulation also: the NCCL call ran on another stream than the caller's, and that
// stream waited for an event of the caller's (the emulation's per-stream records, found with
// dlsym; absent from the real runtime and NCCL, where only the behaviour above is checked).
// gjWait is where rank 0 waits; every result is exact (small integers).
// Exit codes: 0 pass, 1 wrong behaviour (printed), 2 usage, 77 skipped (not enough devices).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device_buffer.h"
#include "expect.h"
#include "gj/collectives.h"
#include "gpu_rank.h"
#include "stall_kernel.h"

using gj::test::DeviceBuffer;
using gj::test::expect;
using gj::test::g_rank;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kLate = std::chrono::milliseconds(1000);
constexpr double kReturnMs = 50.0;
constexpr std::size_t kCount = 4096;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void ok(gjResult_t r, gjComm_t comm, const std::string& call) {
  if (r != gjSuccess) {
    std::fprintf(stderr, "rank %d: FAIL %s: %s: %s\n", g_rank, call.c_str(), gjGetErrorString(r), gjGetLastError(comm));
    std::exit(1);
  }
}

void fill(DeviceBuffer& b, float value) {
  std::vector<float> v(kCount, value);
  b.upload(v.data(), kCount * sizeof(float));
}

bool all_equal(const DeviceBuffer& b, float value) {
  const auto raw = b.download(kCount * sizeof(float));
  std::vector<float> v(kCount);
  std::memcpy(v.data(), raw.data(), raw.size());
  for (float x : v)
    if (x != value) return false;
  return true;
}

// The emulation's records (tests/gpu/emu): the stream of the latest NCCL call, and whether one
// stream waited for an event of another. nullptr against the real runtime and NCCL.
using LastStream = cudaStream_t (*)();
using WaitedFor = int (*)(cudaStream_t, cudaStream_t);
LastStream emulated_last_nccl_stream() {
  const char* path = std::getenv("GJ_NCCL_LIBRARY");
  void* nccl = path != nullptr ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return nccl != nullptr ? reinterpret_cast<LastStream>(dlsym(nccl, "gjemu_nccl_last_stream")) : nullptr;
}

void expect_own_stream(const std::string& name, cudaStream_t caller) {
  const LastStream last = emulated_last_nccl_stream();
  const auto waited = reinterpret_cast<WaitedFor>(dlsym(RTLD_DEFAULT, "gjemu_stream_waited_for"));
  if (last == nullptr || waited == nullptr) return;
  const cudaStream_t used = last();
  expect(used != caller, name + ": the NCCL call ran on the library's own stream, not the caller's");
  expect(waited(used, caller) == 1, name + ": the library's stream waited for an event of the caller's stream");
}

// Rank 1 arrives late; rank 0 times its device gjIallReduce (after `before`, e.g. a pending host
// request) and, while rank 1 still sleeps, whether its own stream is free. Both then wait.
void late_peer_case(const char* name, gjComm_t comm, cudaStream_t s, bool host_first) {
  MPI_Barrier(MPI_COMM_WORLD);
  DeviceBuffer dev(kCount * sizeof(float)), scratch(kCount * sizeof(float));
  fill(dev, static_cast<float>(g_rank + 1));
  std::vector<float> host(kCount, static_cast<float>(g_rank + 1));
  if (g_rank == 1) std::this_thread::sleep_for(kLate);
  gjRequest_t host_request = nullptr, device_request = nullptr;
  if (host_first) {
    ok(gjIallReduce(host.data(), host.data(), kCount, gjFloat32, gjSum, 1.0, 1.0, comm, nullptr, &host_request), comm,
       std::string(name) + ": gjIallReduce(host)");
  }
  const Clock::time_point start = Clock::now();
  ok(gjIallReduce(dev.get(), dev.get(), kCount, gjFloat32, gjSum, 1.0, 1.0, comm, s, &device_request), comm,
     std::string(name) + ": gjIallReduce(device)");
  const double took = ms_since(start);
  if (g_rank == 0) {
    expect(took < kReturnMs, std::string(name) + ": rank 0's gjIallReduce on a device buffer returned in " +
                                 std::to_string(took) + " ms while rank 1 is " + std::to_string(kLate.count()) +
                                 " ms late (must be < " + std::to_string(kReturnMs) + " ms)");
    // The caller's stream is not behind the communication.
    const Clock::time_point copy = Clock::now();
    gj::test::cuda_ok(cudaMemcpyAsync(scratch.get(), dev.get(), 16, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    const double sync = ms_since(copy);
    expect(sync < 300.0, std::string(name) + ": a copy queued on rank 0's stream after the call completed in " +
                             std::to_string(sync) + " ms while the collective waits for rank 1 (must be < 300 ms: "
                             "communication must not run on the caller's stream)");
  }
  if (host_request != nullptr) ok(gjWait(host_request), comm, std::string(name) + ": gjWait(host)");
  ok(gjWait(device_request), comm, std::string(name) + ": gjWait(device)");
  expect(all_equal(dev, 3.0f), std::string(name) + ": device allreduce exact (1 + 2)");
  expect_own_stream(name, s);
  if (host_first) expect(host[kCount - 1] == 3.0f, std::string(name) + ": host allreduce exact");
}

// The collective waits on the device for what the caller's stream produced before the call.
void producer_case(gjComm_t comm, cudaStream_t s) {
  MPI_Barrier(MPI_COMM_WORLD);
  int* host_flag = nullptr;
  int* dev_flag = nullptr;
  gj::test::cuda_ok(cudaHostAlloc(reinterpret_cast<void**>(&host_flag), sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  *host_flag = 0;
  gj::test::cuda_ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), host_flag, 0), "cudaHostGetDevicePointer");
  DeviceBuffer dev(kCount * sizeof(float));
  fill(dev, -100.0f);  // what a collective that did not wait for the producer would reduce
  std::vector<float> produced(kCount, static_cast<float>(10 * (g_rank + 1)));
  gj::test::cuda_ok(gj::test::launch_stall(dev_flag, s), "launch_stall");
  gj::test::cuda_ok(cudaMemcpyAsync(dev.get(), produced.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, s),
                    "cudaMemcpyAsync(the producer)");
  gjRequest_t r = nullptr;
  const Clock::time_point start = Clock::now();
  ok(gjIallReduce(dev.get(), dev.get(), kCount, gjFloat32, gjSum, 1.0, 1.0, comm, s, &r), comm,
     "producer: gjIallReduce(device)");
  const double took = ms_since(start);
  expect(took < kReturnMs, "producer: gjIallReduce returned in " + std::to_string(took) +
                               " ms with the caller's stream stalled (must be < 50 ms)");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  *host_flag = 1;
  ok(gjWait(r), comm, "producer: gjWait");
  expect(all_equal(dev, 30.0f), "producer: the collective reduced what the caller's stream produced (10 + 20)");
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  (void)cudaFreeHost(host_flag);
}

}  // namespace

int main(int argc, char** argv) {
  const gj::test::GpuRank me = gj::test::start_gpu_test(argc, argv, "gpu_nccl_async");
  g_rank = me.rank;
  if (me.size != 2) {
    std::fprintf(stderr, "gpu_nccl_async: needs 2 ranks, got %d\n", me.size);
    return 2;
  }
  cudaStream_t s = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  late_peer_case("first", me.comm, s, false);  // the first device call creates the NCCL communicator
  late_peer_case("behind", me.comm, s, true);
  ok(gjCommSetCheck(me.comm, 1), me.comm, "gjCommSetCheck");
  late_peer_case("checked", me.comm, s, false);
  ok(gjCommSetCheck(me.comm, 0), me.comm, "gjCommSetCheck");
  producer_case(me.comm, s);
  const int failures = gj::test::failures_on_all_ranks();
  ok(gjCommDestroy(me.comm), nullptr, "gjCommDestroy");
  gj::test::cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
  ok(gjFinalize(), nullptr, "gjFinalize");
  if (g_rank == 0) std::printf("%s: %d failures\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
