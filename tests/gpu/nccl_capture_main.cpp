// The watchdog and CUDA graph capture on another thread (defect 5 of the GPU path review), on the backend
// itself, 1 rank: an allreduce stays pending behind a stalled stream, so the watchdog thread
// queries its event every few milliseconds; meanwhile this thread captures a non-blocking stream
// in global mode. The watchdog's query must not invalidate that capture (it runs in relaxed
// capture mode), and growing the fusion buffer for a use on the capturing stream must be
// refused with gjInvalidUsage before any allocation (defect 4).
// Exit codes: 0 pass, 1 wrong behaviour (printed), 77 skipped (no device).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "backend_settings.h"
#include "config.h"
#include "device_buffer.h"
#include "device_skip.h"
#include "error.h"
#include "expect.h"
#include "gpu_rank.h"
#include "nccl/nccl_backend.h"
#include "stall_kernel.h"

using gj::test::cuda_ok;
using gj::test::expect;

int main() {
  if (gj::test::skip_without_devices(1, "gpu_nccl_capture")) return gj::test::kSkip;
  gj::test::init_mpi_rank();
  int* host_flag = nullptr;
  int* dev_flag = nullptr;
  cuda_ok(cudaHostAlloc(reinterpret_cast<void**>(&host_flag), sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  *host_flag = 0;
  cuda_ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), host_flag, 0), "cudaHostGetDevicePointer");
  {
    gj::Config config = gj::test::settings();
    config.timeout_ms = 20000;  // the watchdog looks every 100 ms; nothing times out here
    auto be = gj::make_nccl_backend(MPI_COMM_WORLD, gj::test::current_device(), config);
    cudaStream_t s = nullptr, cap = nullptr;
    cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    cuda_ok(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking), "cudaStreamCreate(capture)");
    gj::test::DeviceBuffer buf(1024 * sizeof(float));
    cuda_ok(gj::test::launch_stall(dev_flag, s), "launch_stall");
    be->allreduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, s);  // pending until the flag is set

    cuda_ok(cudaStreamBeginCapture(cap, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture(global)");
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // several watchdog looks
    std::string msg;
    gjResult_t grow = gjSuccess;
    try {
      (void)be->fusion_buffer(std::size_t{1} << 20, cap);
    } catch (const gj::Error& e) {
      grow = e.code();
      msg = e.what();
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(cap, &graph);
    expect(end == cudaSuccess, std::string("a global-mode capture on this thread survives the watchdog's queries, got ") +
                                   cudaGetErrorName(end));
    expect(grow == gjInvalidUsage && msg.find("capture") != std::string::npos,
           "fusion buffer growth for a capturing non-blocking stream: gjInvalidUsage, got " + std::to_string(grow) +
               ": " + msg);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);

    *host_flag = 1;
    cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    (void)cudaStreamDestroy(cap);
    (void)cudaStreamDestroy(s);
  }
  (void)cudaFreeHost(host_flag);
  const int all = gj::test::failures_on_all_ranks();
  std::printf("%s: gpu_nccl_capture, %d failures\n", all == 0 ? "PASS" : "FAIL", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
