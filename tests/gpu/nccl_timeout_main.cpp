// The NCCL backend's failure path, on the backend itself (2 ranks, 2 GPUs): rank 1 stops calling
// collectives, rank 0 enqueues one that can never complete (and a pack behind it, which growing
// the fusion buffer must not wait for: allocation is stream-ordered), then waits for that work
// as gjWait on a device request does. Rank 0 must get gjTimeout naming the operation and GJ_COLL_TIMEOUT_MS within about the
// timeout, the NCCL communicator must be aborted (every later call: gjInvalidUsage naming the
// first failure), and both ranks must tear down without hanging.
//
// Exit codes: 0 pass, 1 wrong behaviour (printed), 2 usage, 77 skipped (fewer than 2 GPUs).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "backend_settings.h"
#include "config.h"
#include "device_buffer.h"
#include "device_skip.h"
#include "error.h"
#include "expect.h"
#include "gpu_rank.h"
#include "nccl/nccl_backend.h"

namespace {

constexpr long kTimeoutMs = 3000;

using gj::test::expect;

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Rank 0's part.
void stall_and_time_out(gj::Backend& backend, cudaStream_t stream) {
  gj::test::DeviceBuffer buf(4096 * sizeof(float));
  const auto start = std::chrono::steady_clock::now();
  gjResult_t code = gjSuccess;
  std::string message;
  try {
    backend.allreduce(buf.get(), buf.get(), 4096, gjFloat32, gjSum, stream);  // rank 1 never joins
    void* fusion = backend.fusion_buffer(1024, stream);
    const void* srcs[] = {buf.get()};
    const std::size_t bytes[] = {1024};
    const std::size_t offsets[] = {0};
    backend.pack(fusion, srcs, bytes, offsets, 1, stream);  // queued behind the stalled allreduce
    backend.fusion_buffer(std::size_t{1} << 20, stream);   // stream-ordered: returns at once
    void* request = backend.record_completion(stream);
    backend.completion_wait(request);  // bounded by GJ_COLL_TIMEOUT_MS
  } catch (const gj::Error& e) {
    code = e.code();
    message = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("rank 0: after %.1f s: %s\n", seconds, message.c_str());
  expect(code == gjTimeout, "a stalled collective returns gjTimeout, got code " + std::to_string(code));
  expect(contains(message, "GJ_COLL_TIMEOUT_MS=3000") && contains(message, "aborted"),
         "the message names the timeout and the abort: " + message);
  expect(seconds >= 0.9 * kTimeoutMs / 1000 && seconds < 60,
         "the timeout fires after about GJ_COLL_TIMEOUT_MS, took " + std::to_string(seconds) + " s");
  try {
    backend.allreduce(buf.get(), buf.get(), 16, gjFloat32, gjSum, stream);
    expect(false, "a call after the abort must fail");
  } catch (const gj::Error& e) {
    expect(e.code() == gjInvalidUsage && contains(e.what(), "aborted after"),
           std::string("a call after the abort returns gjInvalidUsage naming the first failure: ") + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  if (gj::test::skip_without_devices(2, "gpu_nccl_timeout")) return gj::test::kSkip;
  const gj::test::MpiRank me = gj::test::init_mpi_rank();
  const int rank = me.rank;
  gj::test::g_rank = rank;
  if (me.size != 2) {
    if (rank == 0) std::fprintf(stderr, "run with mpiexec -np 2\n");
    MPI_Finalize();
    return 2;
  }
  gj::Config config = gj::test::settings();
  config.timeout_ms = kTimeoutMs;
  {
    auto backend = gj::make_nccl_backend(MPI_COMM_WORLD, gj::test::current_device(), config);
    cudaStream_t stream = nullptr;
    gj::test::cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    {
      // Both ranks: one collective that completes, so NCCL's connections exist.
      gj::test::DeviceBuffer warm(1024 * sizeof(float));
      backend->allreduce(warm.get(), warm.get(), 1024, gjFloat32, gjSum, stream);
      gj::test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize(warm-up)");
    }
    if (rank == 0) stall_and_time_out(*backend, stream);
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    backend.reset();  // rank 0: aborted; rank 1: its peer is gone, teardown is bounded by the timeout
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    expect(seconds < 60, "teardown took " + std::to_string(seconds) + " s");
    (void)cudaStreamDestroy(stream);
  }
  const int all = gj::test::failures_on_all_ranks();
  MPI_Finalize();
  if (rank == 0) std::printf("%s: %d failures\n", all == 0 ? "PASS" : "FAIL", all);
  return all == 0 ? 0 : 1;
}
