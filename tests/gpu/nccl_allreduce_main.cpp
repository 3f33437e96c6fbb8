// Multi-process GPU test of the NCCL backend through the public C API (run by ctest under
// mpiexec with --ranks N; one GPU per rank). For every dtype x op x in-place/out-of-place x size,
// the device result must equal the MPI backend's result on the same inputs in host memory, and
// for sum/min/max/prod also the exactly known value; grouped allreduce on device must equal
// per-tensor calls; broadcast must deliver the root's data.
//
// Exact equality is required wherever the arithmetic is exact (integer-valued inputs). Float
// avg over a rank count that is not a power of two rounds each scaled contribution, and NCCL
// sums in an order that depends on its algorithm for the message size: there the check allows
// a few units in the last place (docs/gpu.md, "Numerics").
//
// Exit codes: 0 pass, 1 a wrong result (first wrong index printed), 2 usage, 77 skipped.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "device_buffer.h"
#include "elements.h"
#include "expect.h"
#include "gpu_rank.h"
#include "gj/collectives.h"

using gj::test::DeviceBuffer;

namespace {

const char* kDtypeNames[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8"};
const char* kOpNames[] = {"sum", "avg", "min", "max", "prod"};

using gj::test::g_rank;
int g_size = 1;

void fail(const std::string& what) { gj::test::expect(false, what); }

void gj_ok(gjResult_t r, gjComm_t comm, const char* call) {
  if (r != gjSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s: %s\n", g_rank, call, gjGetErrorString(r), gjGetLastError(comm));
    std::exit(1);
  }
}

// Rank r's input at index i: small integers, so every sum/min/max/prod is exact in every dtype.
double input(int r, std::size_t i, gjDataType_t dtype, gjRedOp_t op) {
  const bool u8 = dtype == gjUint8;
  switch (op) {
    case gjProd: {
      static const double s[] = {1, -1, 2, -2};
      static const double u[] = {1, 2, 3};
      return u8 ? u[(i + static_cast<std::size_t>(r)) % 3] : s[(i + static_cast<std::size_t>(r)) % 4];
    }
    case gjMin:
    case gjMax: return static_cast<double>((i * 13 + static_cast<std::size_t>(r) * 5) % 17) - (u8 ? 0 : 8);
    default: return static_cast<double>((i * 7 + static_cast<std::size_t>(r) * 3 + 1) % 11) - (u8 ? 0 : 5);
  }
}

double known_result(std::size_t i, gjDataType_t dtype, gjRedOp_t op) {
  double acc = input(0, i, dtype, op);
  for (int r = 1; r < g_size; ++r) {
    const double v = input(r, i, dtype, op);
    if (op == gjSum) acc += v;
    if (op == gjProd) acc *= v;
    if (op == gjMin) acc = std::fmin(acc, v);
    if (op == gjMax) acc = std::fmax(acc, v);
  }
  return acc;
}

bool power_of_two(int n) { return (n & (n - 1)) == 0; }

// Float avg with a rank count that is not a power of two is the only inexact case here.
bool inexact(gjDataType_t dtype, gjRedOp_t op) {
  return gj::test::is_float(dtype) && op == gjAvg && !power_of_two(g_size);
}

bool close(double a, double b, gjDataType_t dtype) {
  return std::fabs(a - b) <= 4 * gj::test::epsilon(dtype) * std::fmax(std::fabs(a), std::fabs(b)) + 1e-30;
}

// Compares n elements; on the first mismatch records a failure naming the case and the index.
void compare(const std::string& what, const void* got, const void* want, std::size_t n, gjDataType_t dtype,
             bool allow_rounding) {
  const std::size_t es = gjDataTypeSize(dtype);
  for (std::size_t i = 0; i < n; ++i) {
    const auto* g = static_cast<const unsigned char*>(got) + i * es;
    const auto* w = static_cast<const unsigned char*>(want) + i * es;
    if (std::memcmp(g, w, es) == 0) continue;
    const double gv = gj::test::load(got, i, dtype), wv = gj::test::load(want, i, dtype);
    if (allow_rounding && close(gv, wv, dtype)) continue;
    fail(what + ": first wrong index " + std::to_string(i) + ": got " + std::to_string(gv) + ", want " +
         std::to_string(wv));
    return;
  }
}

// shift offsets the pattern so that the tensors of a group differ.
std::vector<unsigned char> make_input(std::size_t count, gjDataType_t dtype, gjRedOp_t op, std::size_t shift = 0) {
  std::vector<unsigned char> v(count * gjDataTypeSize(dtype) + 1);
  for (std::size_t i = 0; i < count; ++i) gj::test::store(v.data(), i, dtype, input(g_rank, i + shift, dtype, op));
  return v;
}

std::string name(const char* call, gjDataType_t dtype, gjRedOp_t op, bool in_place, std::size_t count) {
  return std::string(call) + "(dtype=" + kDtypeNames[dtype] + ", op=" + kOpNames[op] +
         (in_place ? ", in place" : ", out of place") + ", count=" + std::to_string(count) + ")";
}

void test_allreduce(gjComm_t comm, cudaStream_t stream, gjDataType_t dtype, gjRedOp_t op, bool in_place,
                    std::size_t count) {
  const std::size_t bytes = count * gjDataTypeSize(dtype);
  const std::string what = name("gjAllReduce", dtype, op, in_place, count);
  auto host_send = make_input(count, dtype, op);
  std::vector<unsigned char> host_recv(bytes + 1);
  DeviceBuffer dsend(bytes), drecv(bytes);
  dsend.upload(host_send.data(), bytes);
  void* dst = in_place ? dsend.get() : drecv.get();
  gj_ok(gjAllReduce(dsend.get(), dst, count, dtype, op, comm, stream), comm, what.c_str());
  gj::test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const auto device = in_place ? dsend.download(bytes) : drecv.download(bytes);

  void* hdst = in_place ? static_cast<void*>(host_send.data()) : host_recv.data();
  gj_ok(gjAllReduce(host_send.data(), hdst, count, dtype, op, comm, nullptr), comm, ("host " + what).c_str());
  compare(what + " vs the MPI backend", device.data(), hdst, count, dtype, inexact(dtype, op));

  if (op != gjAvg) {
    std::vector<unsigned char> known(bytes + 1);
    for (std::size_t i = 0; i < count; ++i) gj::test::store(known.data(), i, dtype, known_result(i, dtype, op));
    compare(what + " vs the known result", device.data(), known.data(), count, dtype, false);
  }
  if (!in_place) {
    const auto untouched = dsend.download(bytes);
    const auto original = make_input(count, dtype, op);
    if (bytes > 0 && std::memcmp(untouched.data(), original.data(), bytes) != 0) {
      fail(what + ": the send buffer was modified");
    }
  }
}

// Tensors around the fusion threshold: grouped on device == per-tensor on device == grouped on host.
void test_grouped(gjComm_t comm, cudaStream_t stream, gjDataType_t dtype, gjRedOp_t op, bool in_place,
                  std::size_t threshold) {
  const std::size_t es = gjDataTypeSize(dtype), t = threshold / es;
  const std::vector<std::size_t> counts = {1, 7, 0, t - 1, t, t + 1, 3, 1000, 5 * t, 2, t / 2, t / 2 + 1};
  const int n = static_cast<int>(counts.size());
  gj_ok(gjCommSetFusionThreshold(comm, threshold), comm, "gjCommSetFusionThreshold");
  const std::string what = "gjGroupedAllReduce(dtype=" + std::string(kDtypeNames[dtype]) + ", op=" + kOpNames[op] +
                           (in_place ? ", in place" : ", out of place") + ", threshold=" + std::to_string(threshold) + ")";

  std::vector<std::vector<unsigned char>> host_in, host_out;
  std::vector<std::unique_ptr<DeviceBuffer>> dsend, drecv, dsingle;
  std::vector<const void*> dsends, hsends;
  std::vector<void*> drecvs, hrecvs;
  for (int k = 0; k < n; ++k) {
    const std::size_t c = counts[static_cast<std::size_t>(k)], b = c * es;
    host_in.push_back(make_input(c, dtype, op, static_cast<std::size_t>(k)));
    host_out.emplace_back(b + 1);
    dsend.push_back(std::make_unique<DeviceBuffer>(b));
    drecv.push_back(std::make_unique<DeviceBuffer>(b));
    dsingle.push_back(std::make_unique<DeviceBuffer>(b));
    dsend.back()->upload(host_in.back().data(), b);
    dsends.push_back(dsend.back()->get());
    drecvs.push_back(in_place ? dsend.back()->get() : drecv.back()->get());
    hsends.push_back(host_in.back().data());
    hrecvs.push_back(in_place ? static_cast<void*>(host_in.back().data()) : host_out.back().data());
  }
  // Per-tensor reference first (the grouped call may be in place).
  for (int k = 0; k < n; ++k) {
    gj_ok(gjAllReduce(dsends[static_cast<std::size_t>(k)], dsingle[static_cast<std::size_t>(k)]->get(),
                      counts[static_cast<std::size_t>(k)], dtype, op, comm, stream), comm, "gjAllReduce (per tensor)");
  }
  gj_ok(gjGroupedAllReduce(dsends.data(), drecvs.data(), counts.data(), n, dtype, op, comm, stream), comm,
        what.c_str());
  gj::test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  gj_ok(gjGroupedAllReduce(hsends.data(), hrecvs.data(), counts.data(), n, dtype, op, comm, nullptr), comm,
        ("host " + what).c_str());
  for (int k = 0; k < n; ++k) {
    const auto ks = static_cast<std::size_t>(k);
    const std::size_t b = counts[ks] * es;
    const auto grouped = in_place ? dsend[ks]->download(b) : drecv[ks]->download(b);
    const auto single = dsingle[ks]->download(b);
    const std::string tensor = what + " tensor " + std::to_string(k) + " (count=" + std::to_string(counts[ks]) + ")";
    compare(tensor + " vs per-tensor gjAllReduce", grouped.data(), single.data(), counts[ks], dtype, inexact(dtype, op));
    compare(tensor + " vs the MPI backend", grouped.data(), hrecvs[ks], counts[ks], dtype, inexact(dtype, op));
  }
}

void test_broadcast(gjComm_t comm, cudaStream_t stream, gjDataType_t dtype, std::size_t count) {
  const int root = g_size - 1;
  const std::size_t bytes = count * gjDataTypeSize(dtype);
  auto mine = make_input(count, dtype, gjSum);
  DeviceBuffer buf(bytes);
  buf.upload(mine.data(), bytes);
  const std::string what = "gjBroadcast(dtype=" + std::string(kDtypeNames[dtype]) + ", count=" +
                           std::to_string(count) + ", root=" + std::to_string(root) + ")";
  gj_ok(gjBroadcast(buf.get(), count, dtype, root, comm, stream), comm, what.c_str());
  gj::test::cuda_ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<unsigned char> want(bytes + 1);
  for (std::size_t i = 0; i < count; ++i) gj::test::store(want.data(), i, dtype, input(root, i, dtype, gjSum));
  compare(what, buf.download(bytes).data(), want.data(), count, dtype, false);
}

}  // namespace

int main(int argc, char** argv) {
  const gj::test::GpuRank me = gj::test::start_gpu_test(argc, argv, "gpu_nccl_allreduce");
  gjComm_t comm = me.comm;
  g_rank = me.rank;
  g_size = me.size;
  if (me.device_backend != gjBackendNccl) fail("gjCommBackend(is_device=1) is not gjBackendNccl on a machine with GPUs");

  cudaStream_t stream = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const std::vector<std::size_t> sizes = {0, 1, 7, 1000, 16385, (std::size_t{1} << 20) + 3};
  for (int d = 0; d < gjNumReducibleDataTypes; ++d) {
    const auto dtype = static_cast<gjDataType_t>(d);
    for (int o = 0; o < gjNumRedOps; ++o) {
      const auto op = static_cast<gjRedOp_t>(o);
      for (const bool in_place : {false, true}) {
        for (const std::size_t count : sizes) test_allreduce(comm, stream, dtype, op, in_place, count);
        test_grouped(comm, stream, dtype, op, in_place, std::size_t{64} << 10);
      }
    }
    for (const std::size_t count : sizes) test_broadcast(comm, stream, dtype, count);
  }
  // The default stream (NULL) works too.
  test_allreduce(comm, nullptr, gjBfloat16, gjAvg, false, 12345);
  // A larger threshold grows the fusion buffer; then another stream uses it.
  test_grouped(comm, stream, gjFloat32, gjSum, false, std::size_t{1} << 20);
  cudaStream_t other = nullptr;
  gj::test::cuda_ok(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), "cudaStreamCreate");
  test_grouped(comm, other, gjBfloat16, gjAvg, true, std::size_t{1} << 20);
  gj::test::cuda_ok(cudaStreamDestroy(other), "cudaStreamDestroy");

  const int failures = gj::test::failures_on_all_ranks();
  gj::test::cuda_ok(cudaStreamDestroy(stream), "cudaStreamDestroy");
  gj_ok(gjCommDestroy(comm), nullptr, "gjCommDestroy");
  gj_ok(gjFinalize(), nullptr, "gjFinalize");
  if (g_rank == 0) std::printf("%s: %d ranks, %d failures\n", failures == 0 ? "PASS" : "FAIL", g_size, failures);
  return failures == 0 ? 0 : 1;
}
