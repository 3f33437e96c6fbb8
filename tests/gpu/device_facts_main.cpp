// The questions a first run on a real GPU must answer, where the emulation (docs/gpu.md,
// "Emulation") models the real runtime and NCCL from their documentation and the review, not
// from a measurement. One rank, one device; prints one "probe <name>: <answer>" line each, which
// scripts/gpu/device-check.sh copies into its report:
//   contexts      which calls create the primary context of the current device: before any
//                 call, after the context-free queries (cudaGetDeviceCount, cudaGetDevice, the
//                 PCI bus id, cudaGetDriverEntryPointByVersion, the driver's cuPointerGetAttribute
//                 on host memory: its result code), after cudaPointerGetAttributes on host memory
//   not_ready     what cudaGetLastError returns after cudaEventQuery said cudaErrorNotReady
//   grow          the backend's fusion buffer grown right after an unsynchronized use on a stream
//                 that is still busy: how long the growth took, and whether the result is exact
//   abort_busy    ncclCommAbort (the backend's abort) while the user's stream is stalled before
//                 the NCCL kernel: how long it blocked (the stall is released after 2 s)
// Exit codes: 0 every probe ran (the answers are the report), 1 a probe could not run or the
// backend gave a wrong result, 77 skipped (no device).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
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

using Clock = std::chrono::steady_clock;
using gj::test::expect;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

template <typename F>
F driver(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<F>(fn);
}

std::string contexts() {
  auto state = driver<CUresult (*)(CUdevice, unsigned int*, int*)>("cuDevicePrimaryCtxGetState");
  if (state == nullptr) return "unknown (no cuDevicePrimaryCtxGetState)";
  int n = 0;
  (void)cudaGetDeviceCount(&n);
  std::string out;
  for (int d = 0; d < n; ++d) {
    unsigned int flags = 0;
    int active = 0;
    if (state(d, &flags, &active) == CUDA_SUCCESS && active != 0) out += (out.empty() ? "" : ",") + std::to_string(d);
  }
  return "[" + out + "]";
}

void probe(const char* name, const std::string& answer) { std::printf("probe %s: %s\n", name, answer.c_str()); }

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

// Before MPI and before any other CUDA call of this process.
void probe_contexts() {
  std::string a = "at start " + contexts();
  int n = 0, d = 0;
  char bus[32] = {};
  (void)cudaGetDeviceCount(&n);
  (void)cudaGetDevice(&d);
  (void)cudaDeviceGetPCIBusId(bus, sizeof bus, 0);
  a += "; after cudaGetDeviceCount/cudaGetDevice/cudaDeviceGetPCIBusId " + contexts();
  auto attr = driver<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>("cuPointerGetAttribute");
  a += "; after cudaGetDriverEntryPointByVersion " + contexts();
  int host = 0;
  if (attr != nullptr) {
    unsigned int type = 0;
    const CUresult r = attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(&host));
    a += "; cuPointerGetAttribute(host memory) = " + std::to_string(static_cast<int>(r)) + " (1 = INVALID_VALUE), then " +
         contexts();
  }
  cudaPointerAttributes pa{};
  const cudaError_t r = cudaPointerGetAttributes(&pa, &host);
  a += "; after cudaPointerGetAttributes(host memory) = " + std::string(cudaGetErrorName(r)) + " " + contexts();
  (void)cudaGetLastError();
  probe("contexts", a);
}

void probe_not_ready(cudaStream_t s) {
  Flag flag;
  cudaEvent_t e = nullptr;
  gj::test::cuda_ok(cudaEventCreate(&e), "cudaEventCreate");
  gj::test::cuda_ok(gj::test::launch_stall(flag.dev, s), "launch_stall");
  gj::test::cuda_ok(cudaEventRecord(e, s), "cudaEventRecord");
  (void)cudaGetLastError();
  const cudaError_t q = cudaEventQuery(e);
  const cudaError_t last = cudaGetLastError();
  probe("not_ready", std::string("cudaEventQuery = ") + cudaGetErrorName(q) + ", then cudaGetLastError = " +
                         cudaGetErrorName(last));
  flag.release();
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  (void)cudaEventDestroy(e);
}

void probe_grow(gj::Backend& be, cudaStream_t s) {
  constexpr std::size_t kSmall = 4096, kLarge = std::size_t{1} << 22;  // floats
  Flag flag;
  auto* fb = static_cast<float*>(be.fusion_buffer(kSmall * sizeof(float), s));
  std::vector<float> ones(kLarge, 1.0f);
  gj::test::cuda_ok(gj::test::launch_stall(flag.dev, s), "launch_stall");
  gj::test::cuda_ok(cudaMemcpyAsync(fb, ones.data(), kSmall * sizeof(float), cudaMemcpyHostToDevice, s), "H2D");
  be.allreduce(fb, fb, kSmall, gjFloat32, gjSum, s);  // unsynchronized use, still queued
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    flag.release();
  });
  const auto t0 = Clock::now();
  std::string answer;
  try {
    auto* grown = static_cast<float*>(be.fusion_buffer(kLarge * sizeof(float), s));
    answer = "grown in " + std::to_string(since(t0)) + " s (stream busy for 0.5 s)";
    gj::test::cuda_ok(cudaMemcpyAsync(grown, ones.data(), kLarge * sizeof(float), cudaMemcpyHostToDevice, s), "H2D");
    be.allreduce(grown, grown, kLarge, gjFloat32, gjSum, s);
    std::vector<float> out(kLarge);
    gj::test::cuda_ok(cudaMemcpyAsync(out.data(), grown, kLarge * sizeof(float), cudaMemcpyDeviceToHost, s), "D2H");
    gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    bool exact = true;
    for (float v : out) exact = exact && v == 1.0f;
    answer += exact ? ", result exact" : ", result WRONG";
    expect(exact, "grow: the grown buffer reduces exactly");
  } catch (const gj::Error& e) {
    answer = std::string("failed: ") + e.what();
    expect(false, "grow: " + answer);
  }
  release.join();
  probe("grow", answer);
}

void probe_abort_busy(gj::Backend& be, cudaStream_t s) {
  Flag flag;
  gj::test::DeviceBuffer buf(1024 * sizeof(float));
  gj::test::cuda_ok(gj::test::launch_stall(flag.dev, s), "launch_stall");
  be.allreduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, s);  // behind the stall
  const auto t0 = Clock::now();
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    flag.release();
  });
  be.abort();
  const double blocked = since(t0);
  release.join();
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  probe("abort_busy", "ncclCommAbort returned after " + std::to_string(blocked) +
                          " s (the stall before the NCCL kernel ended at 2 s)");
}

}  // namespace

int main() {
  if (gj::test::skip_without_devices(1, "gpu_device_facts")) return gj::test::kSkip;
  probe_contexts();
  const gj::test::MpiRank me = gj::test::init_mpi_rank();
  cudaStream_t s = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  probe_not_ready(s);
  {
    auto be = gj::make_nccl_backend(MPI_COMM_WORLD, me.device, gj::test::settings());
    probe_grow(*be, s);
    probe_abort_busy(*be, s);
  }
  (void)cudaStreamDestroy(s);
  const int all = gj::test::failures_on_all_ranks();
  std::printf("%s: gpu_device_facts, %d failures\n", all == 0 ? "PASS" : "FAIL", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
