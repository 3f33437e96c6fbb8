// Nonblocking operations on device buffers through the public C API, under mpiexec
// with one GPU per rank: gjIallReduce / gjIallGatherV / gjIreduceScatter / gjIbroadcast enqueue
// on the caller's stream and return a request that completes with the stream's work (a CUDA
// event). Many requests in flight, completed by gjTest polling and by gjWait in another order
// than issued; a completed request's handle is refused; a request asked for during CUDA graph
// capture is refused with gjInvalidUsage before anything is captured.
// Inputs are small integers, so every result is exact and compared for equality.
// Exit codes: 0 pass, 1 wrong behaviour (printed), 2 usage, 77 skipped (not enough devices).
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "expect.h"
#include "gj/collectives.h"
#include "gpu_rank.h"

using gj::test::DeviceBuffer;

namespace {

using gj::test::expect;
using gj::test::g_rank;
int g_size = 1;

void gj_ok(gjResult_t r, gjComm_t comm, const std::string& call) {
  if (r != gjSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s: %s\n", g_rank, call.c_str(), gjGetErrorString(r), gjGetLastError(comm));
    std::exit(1);
  }
}

std::vector<float> down(const DeviceBuffer& b, std::size_t n) {
  std::vector<float> out(n);
  const auto raw = b.download(n * sizeof(float));
  std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

void up(DeviceBuffer& b, const std::vector<float>& v) { b.upload(v.data(), v.size() * sizeof(float)); }

// Polls gjTest until every request is done (each done one is freed and nulled); null entries
// are requests completed already. gjTest never blocks, so the loop bounds itself: requests still
// pending after kPollLimit are named and fail the test instead of hanging it.
void test_until_done(std::vector<gjRequest_t>& reqs, gjComm_t comm, const char* what) {
  constexpr auto kPollLimit = std::chrono::seconds(60);
  const auto start = std::chrono::steady_clock::now();
  std::size_t left = 0;
  for (gjRequest_t r : reqs) left += r != nullptr ? 1 : 0;
  while (left > 0) {
    for (gjRequest_t& r : reqs) {
      if (r == nullptr) continue;
      int done = 0;
      gj_ok(gjTest(r, &done), comm, "gjTest");
      if (done != 0) {
        r = nullptr;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() - start > kPollLimit) {
      std::string pending;
      for (std::size_t i = 0; i < reqs.size(); ++i)
        if (reqs[i] != nullptr) pending += (pending.empty() ? "#" : ", #") + std::to_string(i);
      std::fprintf(stderr, "rank %d: FAIL %s: requests %s of %zu still pending after %lld s of gjTest polling\n",
                   g_rank, what, pending.c_str(), reqs.size(), static_cast<long long>(kPollLimit.count()));
      std::exit(1);
    }
  }
}

// Many allreduces of different sizes in flight on one stream; half completed by gjWait in
// reverse order, half by gjTest.
void many_allreduces(gjComm_t comm, cudaStream_t s) {
  constexpr int kInFlight = 64;
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::size_t> counts;
  std::vector<gjRequest_t> waited, tested;
  for (int k = 0; k < kInFlight; ++k) {
    const std::size_t n = 1 + static_cast<std::size_t>(k) * 997;
    counts.push_back(n);
    bufs.push_back(std::make_unique<DeviceBuffer>(n * sizeof(float)));
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(g_rank + 1 + static_cast<int>(i % 13) + k);
    up(*bufs.back(), v);
    gjRequest_t r = nullptr;
    gj_ok(gjIallReduce(bufs.back()->get(), bufs.back()->get(), n, gjFloat32, gjSum, 1.0, 1.0, comm, s, &r), comm,
          "gjIallReduce");
    expect(r != nullptr, "gjIallReduce on device buffers returns a request");
    (k % 2 == 0 ? waited : tested).push_back(r);
  }
  for (auto it = waited.rbegin(); it != waited.rend(); ++it) gj_ok(gjWait(*it), comm, "gjWait");
  test_until_done(tested, comm, "gjIallReduce requests completed by gjTest");
  const float ranks_sum = static_cast<float>(g_size * (g_size + 1) / 2);
  for (int k = 0; k < kInFlight; ++k) {
    const auto got = down(*bufs[static_cast<std::size_t>(k)], counts[static_cast<std::size_t>(k)]);
    bool ok = true;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ok &= got[i] == ranks_sum + static_cast<float>(g_size * (static_cast<int>(i % 13) + k));
    }
    expect(ok, "gjIallReduce #" + std::to_string(k) + " (count " + std::to_string(counts[static_cast<std::size_t>(k)]) + ")");
  }
}

void other_operations(gjComm_t comm, cudaStream_t s) {
  const auto size = static_cast<std::size_t>(g_size);
  // allgatherv: rank r contributes r + 1 elements of value 100 r + i.
  std::vector<std::size_t> counts(size);
  std::size_t total = 0;
  for (std::size_t r = 0; r < size; ++r) total += counts[r] = r + 1;
  const std::size_t mine = counts[static_cast<std::size_t>(g_rank)];
  DeviceBuffer gsend(mine * 4), grecv(total * 4);
  std::vector<float> gv(mine);
  for (std::size_t i = 0; i < mine; ++i) gv[i] = static_cast<float>(100 * g_rank + static_cast<int>(i));
  up(gsend, gv);
  // reduce-scatter: equal slices of 1000, every rank's input i + rank.
  const std::size_t slice = 1000;
  std::vector<std::size_t> rs_counts(size, slice);
  DeviceBuffer rsend(slice * size * 4), rrecv(slice * 4);
  std::vector<float> rv(slice * size);
  for (std::size_t i = 0; i < rv.size(); ++i) rv[i] = static_cast<float>(static_cast<int>(i % 50) + g_rank);
  up(rsend, rv);
  // broadcast from the last rank.
  const int root = g_size - 1;
  DeviceBuffer bbuf(4096 * 4);
  std::vector<float> bv(4096);
  for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(g_rank == root ? static_cast<int>(i % 97) : -1);
  up(bbuf, bv);

  std::vector<gjRequest_t> reqs(3, nullptr);
  gj_ok(gjIallGatherV(gsend.get(), grecv.get(), counts.data(), gjFloat32, comm, s, &reqs[0]), comm, "gjIallGatherV");
  gj_ok(gjIreduceScatter(rsend.get(), rrecv.get(), rs_counts.data(), gjFloat32, gjSum, 1.0, 1.0, comm, s, &reqs[1]),
        comm, "gjIreduceScatter");
  gj_ok(gjIbroadcast(bbuf.get(), bv.size(), gjFloat32, root, comm, s, &reqs[2]), comm, "gjIbroadcast");
  gj_ok(gjWait(reqs[1]), comm, "gjWait(reduce-scatter)");
  reqs[1] = nullptr;  // freed by gjWait: test_until_done polls the other two only
  test_until_done(reqs, comm, "gjIallGatherV and gjIbroadcast requests");

  const auto g = down(grecv, total);
  bool ok = true;
  std::size_t at = 0;
  for (std::size_t r = 0; r < size; ++r)
    for (std::size_t i = 0; i < counts[r]; ++i) ok &= g[at++] == static_cast<float>(100 * static_cast<int>(r) + static_cast<int>(i));
  expect(ok, "gjIallGatherV per-rank counts");

  const auto rs = down(rrecv, slice);
  ok = true;
  const int rank_sum = g_size * (g_size - 1) / 2;
  for (std::size_t i = 0; i < slice; ++i) {
    const std::size_t global = static_cast<std::size_t>(g_rank) * slice + i;
    ok &= rs[i] == static_cast<float>(g_size * static_cast<int>(global % 50) + rank_sum);
  }
  expect(ok, "gjIreduceScatter equal slices");

  const auto b = down(bbuf, bv.size());
  ok = true;
  for (std::size_t i = 0; i < b.size(); ++i) ok &= b[i] == static_cast<float>(static_cast<int>(i % 97));
  expect(ok, "gjIbroadcast from the last rank");
}

void request_misuse(gjComm_t comm, cudaStream_t s) {
  DeviceBuffer buf(1024 * 4);
  gjRequest_t r = nullptr;
  gj_ok(gjIallReduce(buf.get(), buf.get(), 1024, gjFloat32, gjMax, 1.0, 1.0, comm, s, &r), comm, "gjIallReduce");
  gj_ok(gjWait(r), comm, "gjWait");
  expect(gjWait(r) == gjInvalidUsage, "a second gjWait on a completed device request is gjInvalidUsage");
  int done = 0;
  expect(gjTest(r, &done) == gjInvalidUsage, "gjTest on a completed device request is gjInvalidUsage");

  // During capture: refused before anything is enqueued, so the capture ends cleanly, empty.
  cudaStream_t cap = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&cap, cudaStreamNonBlocking), "cudaStreamCreate");
  gj::test::cuda_ok(cudaStreamBeginCapture(cap, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  gjRequest_t in_capture = nullptr;
  const gjResult_t rc = gjIallReduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, 1.0, 1.0, comm, cap, &in_capture);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(cap, &graph);
  expect(rc == gjInvalidUsage, std::string("gjIallReduce during CUDA graph capture is gjInvalidUsage, got ") +
                                   gjGetErrorString(rc));
  expect(in_capture == nullptr, "no request is returned during capture");
  expect(end == cudaSuccess, std::string("the capture ends cleanly after the refusal: ") + cudaGetErrorString(end));
  std::size_t nodes = 1;
  if (graph != nullptr) {
    (void)cudaGraphGetNodes(graph, nullptr, &nodes);
    (void)cudaGraphDestroy(graph);
  }
  expect(nodes == 0, "nothing was captured by the refused call");
  gj::test::cuda_ok(cudaStreamDestroy(cap), "cudaStreamDestroy");
  // The communicator stays usable.
  gj_ok(gjIallReduce(buf.get(), buf.get(), 1024, gjFloat32, gjSum, 1.0, 1.0, comm, s, &r), comm,
        "gjIallReduce after the refused capture");
  gj_ok(gjWait(r), comm, "gjWait");
}

// Requests left in flight are completed by gjCommDestroy (settled, then freed).
void left_in_flight(gjComm_t comm, cudaStream_t s, DeviceBuffer& buf) {
  for (int k = 0; k < 8; ++k) {
    gjRequest_t r = nullptr;
    gj_ok(gjIallReduce(buf.get(), buf.get(), buf.bytes() / 4, gjFloat32, gjSum, 1.0, 1.0, comm, s, &r), comm,
          "gjIallReduce (left in flight)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const gj::test::GpuRank me = gj::test::start_gpu_test(argc, argv, "gpu_nccl_requests");
  g_rank = me.rank;
  g_size = me.size;
  cudaStream_t s = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  many_allreduces(me.comm, s);
  other_operations(me.comm, s);
  request_misuse(me.comm, s);
  int failures = 0;
  {
    DeviceBuffer buf(1 << 20);
    left_in_flight(me.comm, s, buf);
    failures = gj::test::failures_on_all_ranks();
    gj_ok(gjCommDestroy(me.comm), nullptr, "gjCommDestroy with device requests in flight");
  }
  gj::test::cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
  gj_ok(gjFinalize(), nullptr, "gjFinalize");
  if (g_rank == 0) std::printf("%s: %d ranks, %d failures\n", failures == 0 ? "PASS" : "FAIL", g_size, failures);
  return failures == 0 ? 0 : 1;
}
