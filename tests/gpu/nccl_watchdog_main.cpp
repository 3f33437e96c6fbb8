// The watchdog (collectives/src/nccl/nccl_watchdog.h) on 2 ranks: rank 1 stalls its stream with
// a kernel spinning on a host-mapped flag before its allreduce, so rank 0's allreduce can never
// complete on the device. Neither rank calls gj again for 3 timeouts: rank 0's watchdog must
// abort on its own (rank 0's stream then drains: NCCL's kernels end on abort), and its next call
// must return gjTimeout naming the allreduce and GJ_COLL_TIMEOUT_MS, the one after gjInvalidUsage.
// Rank 1's timeout is twice rank 0's so that rank 0's expiry comes first: were they equal, rank
// 1's abort could reach rank 0 as a lost peer before rank 0's own deadline. Rank 1 only has to
// fail its next call (by its own timeout or by the lost peer) and refuse the one after. Rank 1's
// own watchdog aborts while its stream is still stalled, and ncclCommAbort returns only once the
// stream drains (the real NCCL's and the test NCCL's rule): its calls meanwhile must fail at once
// with the cause, not block behind the watchdog (the stall ends only after them).
// Exit codes: 0 pass, 1 wrong behaviour (printed), 77 skipped (fewer than 2 devices).
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

namespace {

constexpr long kTimeoutMs = 2000;
using gj::test::expect;

}  // namespace

int main() {
  if (gj::test::skip_without_devices(2, "gpu_nccl_watchdog")) return gj::test::kSkip;
  const int rank = gj::test::init_mpi_rank().rank;
  gj::test::g_rank = rank;
  int* host_flag = nullptr;
  int* dev_flag = nullptr;
  gj::test::cuda_ok(cudaHostAlloc(reinterpret_cast<void**>(&host_flag), sizeof(int), cudaHostAllocMapped), "cudaHostAlloc");
  *host_flag = 0;
  gj::test::cuda_ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev_flag), host_flag, 0), "cudaHostGetDevicePointer");
  {
    gj::Config config = gj::test::settings();
    config.timeout_ms = rank == 0 ? kTimeoutMs : 2 * kTimeoutMs;
    auto be = gj::make_nccl_backend(MPI_COMM_WORLD, gj::test::current_device(), config);
    cudaStream_t s = nullptr;
    gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    gj::test::DeviceBuffer buf(1024 * sizeof(float));
    be->allreduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, s);  // connections up
    gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize(warm-up)");
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 1) gj::test::cuda_ok(gj::test::launch_stall(dev_flag, s), "launch_stall");
    be->allreduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, s);  // rank 0's never completes
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * kTimeoutMs));  // no gj call meanwhile

    if (rank == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      const cudaError_t drained = cudaStreamSynchronize(s);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      expect(secs < 1.0, "rank 0's stream drained within 1 s of the abort (took " + std::to_string(secs) + " s, " +
                             cudaGetErrorString(drained) + ")");
    }
    gjResult_t first = gjSuccess, second = gjSuccess;
    std::string msg;
    try {
      be->allreduce(buf.get(), buf.get(), 16, gjFloat32, gjSum, s);
    } catch (const gj::Error& e) {
      first = e.code();
      msg = e.what();
    }
    if (rank == 0) {
      expect(first == gjTimeout && msg.find("ncclAllReduce") != std::string::npos &&
                 msg.find("GJ_COLL_TIMEOUT_MS=2000") != std::string::npos,
             "the next call after the watchdog's abort: gjTimeout naming the allreduce, got " + std::to_string(first) +
                 ": " + msg);
    } else {
      expect(first != gjSuccess, "rank 1's next call after its communicator's abort fails");
    }
    try {
      be->allreduce(buf.get(), buf.get(), 16, gjFloat32, gjSum, s);
    } catch (const gj::Error& e) {
      second = e.code();
    }
    expect(second == gjInvalidUsage, "the call after that: gjInvalidUsage, got " + std::to_string(second));
    *host_flag = 1;  // rank 1's stall kernel ends
    (void)cudaStreamSynchronize(s);
    (void)cudaStreamDestroy(s);
  }
  (void)cudaFreeHost(host_flag);
  const int all = gj::test::failures_on_all_ranks();
  if (rank == 0) std::printf("%s: gpu_nccl_watchdog, %d failures\n", all == 0 ? "PASS" : "FAIL", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
