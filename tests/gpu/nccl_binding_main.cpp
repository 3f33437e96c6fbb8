// Device binding through the public API (defects 1 and 2 of the GPU path review), 2 ranks on one node with
// 2 devices: "--order after" makes each rank's device current only after gjCommInitWorld (as
// Horovod scripts call torch.cuda.set_device(hvd.local_rank()) after hvd.init()), "--order
// before" first. Both must reduce exactly on each rank's own device: the NCCL communicator is
// created at the first device collective, on the buffer's device. "--order shared" puts both
// ranks on device 0: NCCL (< 2.30) would refuse, so device buffers must be refused with
// gjUnsupported naming both ranks, before NCCL init, while host buffers still reduce.
// "--order after" also reduces a host buffer before the device is made current (a script's
// hvd.init() work, before torch.cuda.set_device) and then requires that this rank created no
// CUDA context on any device but its own (the real runtime creates one on the current device,
// GPU 0, for a pointer query or a cudaSetDevice back to it: 8 contexts on GPU 0, and ranks 1-7
// failing in EXCLUSIVE_PROCESS mode).
// "--order alltoall_empty": rank 1 sends and receives nothing in a device alltoall while rank 0
// exchanges with itself: both must take the same path (no hang) and rank 0's result is exact.
// "--order too_many": more ranks on the node than devices (ctest: one emulated device):
// gjCommInitWorld itself fails with gjUnsupported saying what to change (or, with NCCL >= 2.30
// and NCCL_MULTI_RANK_GPU_ENABLE=1, "--order too_many_allowed", succeeds and reduces exactly).
// Exit codes: 0 pass, 1 wrong behaviour (printed), 2 usage, 77 skipped (not enough devices).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
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

// The devices this process created a primary context on, asked of the driver (no context made).
std::vector<int> context_devices() {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  std::vector<int> out;
  if (cudaGetDriverEntryPointByVersion("cuDevicePrimaryCtxGetState", &fn, 12000, cudaEnableDefault, &status) !=
          cudaSuccess ||
      status != cudaDriverEntryPointSuccess) {
    return {-1};
  }
  auto get = reinterpret_cast<CUresult (*)(CUdevice, unsigned int*, int*)>(fn);
  int n = 0;
  (void)cudaGetDeviceCount(&n);
  for (int d = 0; d < n; ++d) {
    unsigned int flags = 0;
    int active = 0;
    if (get(d, &flags, &active) == CUDA_SUCCESS && active != 0) out.push_back(d);
  }
  return out;
}

std::string list(const std::vector<int>& v) {
  std::string s;
  for (int d : v) s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

void alltoall_empty(gjComm_t comm, int rank) {
  const std::size_t n = 333;
  std::vector<std::size_t> counts(2, 0);
  if (rank == 0) counts[0] = n;  // rank 0 exchanges with itself only; rank 1 with nobody
  gj::test::DeviceBuffer send(n * sizeof(int)), recv(n * sizeof(int));
  std::vector<int> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i * 7 + 1);
  send.upload(v.data(), n * sizeof(int));
  cudaStream_t s = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  // rank 1 passes no buffers at all (an empty tensor's data pointer is NULL).
  const gjResult_t r = gjAllToAllV(rank == 0 ? send.get() : nullptr, counts.data(), rank == 0 ? recv.get() : nullptr,
                                   counts.data(), gjInt32, comm, s);
  expect(r == gjSuccess, std::string("alltoall with an empty rank: ") + gjGetErrorString(r) + ": " +
                             gjGetLastError(comm));
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  (void)cudaStreamDestroy(s);
  if (rank == 0 && r == gjSuccess) {
    const auto raw = recv.download(n * sizeof(int));
    expect(std::memcmp(raw.data(), v.data(), raw.size()) == 0, "alltoall with an empty rank: rank 0's own block");
  }
  // Both ranks still call collectives in step: a host allreduce after it.
  float x = static_cast<float>(rank + 1);
  const gjResult_t host = gjAllReduce(&x, &x, 1, gjFloat32, gjSum, comm, nullptr);
  expect(host == gjSuccess && x == 3.0f, "alltoall with an empty rank: the ranks are still in step");
}

// Whether the NCCL the library loads lets two ranks share a device: 2.30+ with
// NCCL_MULTI_RANK_GPU_ENABLE=1 (the device check exports it where NCCL is that new). Then
// "shared" and "too_many" must work instead of being refused.
bool sharing_allowed() {
  int version = 0;
  const char* enable = std::getenv("NCCL_MULTI_RANK_GPU_ENABLE");
  return gjNcclVersion(&version) == gjSuccess && version >= 23000 && enable != nullptr && std::strcmp(enable, "1") == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::strcmp(argv[1], "--order") != 0) {
    std::fprintf(stderr, "usage: mpiexec -np 2 %s --order after|before|shared|alltoall_empty|too_many|too_many_allowed\n",
                 argv[0]);
    return 2;
  }
  const std::string order = argv[2];
  const bool too_many = order.rfind("too_many", 0) == 0;
  if (gj::test::skip_without_devices(order == "shared" || too_many ? 1 : 2, "gpu_nccl_binding")) return gj::test::kSkip;
  if (too_many) {
    int n = 0;
    (void)cudaGetDeviceCount(&n);
    if (n >= 2) {
      std::printf("SKIP gpu_nccl_binding --order %s: needs fewer devices than its 2 ranks, found %d\n", order.c_str(), n);
      return gj::test::kSkip;
    }
  }
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
  int device = 0;
  if (order == "before" || order == "alltoall_empty") {
    if (const std::string e = gj::test::use_local_device(device); !e.empty()) std::fprintf(stderr, "%s\n", e.c_str());
  }
  gjComm_t comm = nullptr;
  const gjResult_t init = gjCommInitWorld(&comm);
  const bool shared_ok = sharing_allowed();
  if (order == "too_many" && !shared_ok) {
    const std::string why = gjGetLastError(nullptr);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    gj::test::g_rank = world_rank;
    expect(init == gjUnsupported && why.find("2 ranks on host") != std::string::npos &&
               why.find("GJ_COLL_BACKEND=mpi") != std::string::npos && why.find("-npernode 1") != std::string::npos,
           "more ranks than devices: gjCommInitWorld is gjUnsupported saying what to change, got " +
               std::to_string(init) + ": " + why);
    if (init == gjSuccess) gjCommDestroy(comm);
    const int all = gj::test::failures_on_all_ranks();
    if (world_rank == 0) std::printf("%s: gpu_nccl_binding --order too_many, %d failures\n", all == 0 ? "PASS" : "FAIL", all);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
  }
  if (init != gjSuccess) {
    std::fprintf(stderr, "FAIL gjCommInitWorld: %s\n", gjGetLastError(nullptr));
    return 1;
  }
  int rank = 0, size = 1;
  gjCommRank(comm, &rank);
  gjCommSize(comm, &size);
  gj::test::g_rank = rank;
  if (order == "after") {
    // A script's hvd.init() work on host buffers, before its torch.cuda.set_device.
    float x = static_cast<float>(rank + 1);
    const gjResult_t host = gjAllReduce(&x, &x, 1, gjFloat32, gjSum, comm, nullptr);
    expect(host == gjSuccess, "a host allreduce before the device is made current");
    if (const std::string e = gj::test::use_local_device(device); !e.empty()) std::fprintf(stderr, "%s\n", e.c_str());
  }
  std::string error;
  if (order == "shared" && shared_ok) {
    cuda_ok(cudaSetDevice(0), "cudaSetDevice(0)");
    const bool ok = device_allreduce(comm, rank, size, &error);
    expect(ok, "two ranks on one device with NCCL >= 2.30 and NCCL_MULTI_RANK_GPU_ENABLE=1: the allreduce works: " +
                   error);
  } else if (order == "shared") {
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
  } else if (order == "alltoall_empty") {
    const bool ok = device_allreduce(comm, rank, size, &error);
    expect(ok, "alltoall_empty: the first device allreduce: " + error);
    alltoall_empty(comm, rank);
  } else {
    const bool ok = device_allreduce(comm, rank, size, &error);
    expect(ok, "device set " + order + " gjCommInitWorld: allreduce on device " + std::to_string(device) + ": " + error);
    if (order == "after") {
      const std::vector<int> contexts = context_devices();
      expect(contexts == std::vector<int>{device}, "only this rank's device " + std::to_string(device) +
                                                       " has a CUDA context of this process, found " + list(contexts));
    }
  }
  gjCommDestroy(comm);
  const int all = gj::test::failures_on_all_ranks();
  if (rank == 0) std::printf("%s: gpu_nccl_binding --order %s, %d failures\n", all == 0 ? "PASS" : "FAIL", order.c_str(), all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
