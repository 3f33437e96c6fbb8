// Device binding through the public API (issue #24, defects 1 and 2), 2 ranks on one node with
// 2 devices: "--order after" makes each rank's device current only after gjCommInitWorld (as
// Horovod scripts call torch.cuda.set_device(hvd.local_rank()) after hvd.init()), "--order
// before" first. Both must reduce exactly on each rank's own device: the NCCL communicator is
// created at the first device collective, on the buffer's device. "--order shared" puts both
// ranks on device 0: NCCL (< 2.30) would refuse, so device buffers must be refused with
// gjUnsupported naming both ranks, before NCCL init, while host buffers still reduce.
// Exit codes: 0 pass, 1 wrong behaviour (printed), 2 usage, 77 skipped (not enough devices).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "device_skip.h"
#include "expect.h"
#include "gj/collectives.h"
#include "gpu_rank.h"

using gj::test::cuda_ok;
using gj::test::expect;

namespace {

bool device_allreduce(gjComm_t comm, int rank, int size, std::string* error) {
  const std::size_t n = 1000;
  gj::test::DeviceBuffer buf(n * sizeof(float));
  std::vector<float> v(n, static_cast<float>(rank + 1));
  buf.upload(v.data(), n * sizeof(float));
  cudaStream_t s = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  const gjResult_t r = gjAllReduce(buf.get(), buf.get(), n, gjFloat32, gjSum, comm, s);
  if (r != gjSuccess) {
    *error = std::string(gjGetErrorString(r)) + ": " + gjGetLastError(comm);
    (void)cudaStreamDestroy(s);
    return false;
  }
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  (void)cudaStreamDestroy(s);
  const auto raw = buf.download(n * sizeof(float));
  std::vector<float> got(n);
  std::memcpy(got.data(), raw.data(), raw.size());
  const float want = static_cast<float>(size * (size + 1) / 2);
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != want) {
      *error = "index " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " + std::to_string(want);
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--order") != 0) {
    std::fprintf(stderr, "usage: mpiexec -np 2 %s --order after|before|shared\n", argv[0]);
    return 2;
  }
  const std::string order = argv[2];
  if (gj::test::skip_without_devices(order == "shared" ? 1 : 2, "gpu_nccl_binding")) return gj::test::kSkip;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  int device = 0;
  if (order == "before") {
    if (const std::string e = gj::test::use_local_device(device); !e.empty()) std::fprintf(stderr, "%s\n", e.c_str());
  }
  gjComm_t comm = nullptr;
  if (gjCommInitWorld(&comm) != gjSuccess) {
    std::fprintf(stderr, "FAIL gjCommInitWorld: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  int rank = 0, size = 1;
  gjCommRank(comm, &rank);
  gjCommSize(comm, &size);
  gj::test::g_rank = rank;
  if (order == "after") {
    if (const std::string e = gj::test::use_local_device(device); !e.empty()) std::fprintf(stderr, "%s\n", e.c_str());
  }
  std::string error;
  if (order == "shared") {
    cuda_ok(cudaSetDevice(0), "cudaSetDevice(0)");
    const bool ok = device_allreduce(comm, rank, size, &error);
    expect(!ok && error.rfind("unsupported: ", 0) == 0 && error.find("both use the CUDA device") != std::string::npos,
           "two ranks on one device: gjUnsupported naming them before NCCL init, got " + (ok ? "success" : error));
    float x = static_cast<float>(rank + 1);
    const gjResult_t host = gjAllReduce(&x, &x, 1, gjFloat32, gjSum, comm, nullptr);
    expect(host == gjSuccess && x == static_cast<float>(size * (size + 1) / 2), "host buffers still reduce");
    error.clear();
    const bool again = device_allreduce(comm, rank, size, &error);
    expect(!again && error.find("both use the CUDA device") != std::string::npos,
           "a later device call gets the same reason, got " + (again ? "success" : error));
  } else {
    const bool ok = device_allreduce(comm, rank, size, &error);
    expect(ok, "device set " + order + " gjCommInitWorld: allreduce on device " + std::to_string(device) + ": " + error);
  }
  gjCommDestroy(comm);
  const int all = gj::test::failures_on_all_ranks();
  if (rank == 0) std::printf("%s: gpu_nccl_binding --order %s, %d failures\n", all == 0 ? "PASS" : "FAIL", order.c_str(), all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
