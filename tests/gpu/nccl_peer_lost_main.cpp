// The NCCL path when a peer leaves the job (docs/collectives.md "Failure: a rank that leaves
// the job"), through the public API, each rank under the rank wrapper's test double
// (tests/collectives/mpi/rank_monitor_double.h): after a first device allreduce rank 1 shuts
// down (destroy, gjFinalize: `leave`, so its wrapper reports it lost while the process lives on,
// waiting for `end`: nothing but the watchdog can end rank 0's wait); rank 0's next device
// allreduce is enqueued and can never complete. Within 2 s of
// its wrapper's `lost` the watchdog must abort the NCCL communicator (rank 0's stream drains:
// NCCL's kernels end on abort) and the next call returns gjPeerLost naming rank 1, its host and
// the reason. GJ_COLL_TIMEOUT_MS is 0 (the default): no timeout could be what ends the wait.
// Run with peer_lost_run.sh; the verdicts decide. Exit 77: fewer than 2 devices.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "../collectives/mpi/rank_monitor_double.h"
#include "device_buffer.h"
#include "gj/collectives.h"
#include "gpu_rank.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: nccl_peer_lost DIR\n");
    return 2;
  }
  gj::test::DoubleOptions o;
  const std::string dir = gj::test::run_under_double(argv[1], o);  // the rank from here
  int device = 0;
  if (const std::string why = gj::test::use_local_device(device); !why.empty()) {
    std::fprintf(stderr, "SKIP: %s\n", why.c_str());
    return 77;
  }
  gjComm_t c = nullptr;
  if (gjCommInitWorld(&c) != gjSuccess) {
    std::fprintf(stderr, "init: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  int rank = 0;
  gjCommRank(c, &rank);
  cudaStream_t s = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  gj::test::DeviceBuffer buf(1024 * sizeof(float));
  int failures = 0;
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok) {
      std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, what.c_str());
      ++failures;
    }
  };
  expect(gjAllReduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, c, s) == gjSuccess, gjGetLastError(c));
  gj::test::cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize(first)");
  if (rank == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    expect(gjCommDestroy(c) == gjSuccess, gjGetLastError(nullptr));
    expect(gjFinalize() == gjSuccess, gjGetLastError(nullptr));
    return failures == 0 ? 0 : 1;
  }
  // Enqueued; rank 1 never joins it.
  expect(gjAllReduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, c, s) == gjSuccess, gjGetLastError(c));
  const cudaError_t drained = cudaStreamSynchronize(s);  // returns once the watchdog aborted
  const long drained_at = gj::test::monotonic_ms();
  std::string since;
  for (int i = 0; i < 200 && since.empty(); ++i) {
    since = gj::test::read_file(dir + "/sent_at.0.1");
    if (since.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  expect(!since.empty(), "the wrapper sent `lost rank=1`");
  const long took = drained_at - std::atol(since.c_str());
  std::printf("rank 0: stream drained %ld ms after the wrapper's `lost` (%s)\n", took, cudaGetErrorString(drained));
  expect(took >= 0 && took <= 2000, "the stream drained " + std::to_string(took) + " ms after `lost`, bound 2000 ms");
  const gjResult_t rc = gjAllReduce(buf.get(), buf.get(), 16, gjFloat32, gjSum, c, s);
  const std::string msg = gjGetLastError(c);
  std::printf("rank 0: %s\n", msg.c_str());
  expect(rc == gjPeerLost, "the next call: gjPeerLost, got " + std::to_string(rc) + ": " + msg);
  expect(msg.find("rank 1 (host pod-1) left the job: called shutdown") != std::string::npos, "message: " + msg);
  gjCommAbort(c);
  gjFinalize();
  std::printf("%s: gpu_nccl_peer_lost\n", failures == 0 ? "PASS" : "FAIL");
  return failures == 0 ? 0 : 1;
}
