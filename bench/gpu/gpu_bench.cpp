// GPU benchmark, one table in the nccl-tests format:
//   allreduce  gj (gjAllReduce on device buffers, NCCL backend) vs raw ncclAllReduce, f32 and
//              bf16 sum, 4 B .. 256 MiB, alternating runs; ratio = raw time / gj time.
//   grouped    ResNet-50's 161 gradient tensors (f32): gjGroupedAllReduce vs one raw
//              ncclAllReduce per tensor (ratio), and vs the same inside ncclGroupStart/End (shown).
//   kernels    the fusion pack/unpack kernel and the f16/bf16 scale kernel vs cudaMemcpyAsync D2D
//              of the same bytes in the same run (ratio = memcpy time / kernel time).
// algbw = bytes / time. busbw: allreduce algbw * 2(n-1)/n (nccl-tests); copies and element-wise
// kernels count memory traffic, bytes read + written = 2 * bytes / time, comparable with the
// device's memory bandwidth. Times are per operation, the slowest rank's, best of two rounds.
//
// Usage: mpiexec -np <GPUs> gj_gpu_bench [--max-bytes N] [--quick]. Exit 77 without a device.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "config.h"
#include "cuda/batched_copy.h"
#include "env.h"
#include "nccl_loader.h"
#include "cuda/elementwise.h"
#include "gj/collectives.h"
#include "device_skip.h"  // tests/gpu
#include "gpu_rank.h"     // tests/gpu
#include "resnet50_shapes.h"

namespace {

int g_rank = 0, g_size = 1;
bool g_quick = false;

void die(const std::string& msg) {
  std::fprintf(stderr, "rank %d: gj_gpu_bench: %s\n", g_rank, msg.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
}
void cuda_ok(cudaError_t e, const char* call) {
  if (e != cudaSuccess) die(std::string(call) + ": " + cudaGetErrorString(e));
}
void nccl_ok(ncclResult_t r, const char* call) {
  if (r != ncclSuccess) die(std::string(call) + ": " + ncclGetErrorString(r));
}
void gj_ok(gjResult_t r, gjComm_t comm, const char* call) {
  if (r != gjSuccess) die(std::string(call) + ": " + gjGetErrorString(r) + ": " + gjGetLastError(comm));
}

struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) { cuda_ok(cudaMalloc(&p, std::max<std::size_t>(bytes, 16)), "cudaMalloc"); }
  ~Device() { (void)cudaFree(p); }
  char* c() const { return static_cast<char*>(p); }
};

struct Row {
  std::size_t bytes, count;
  std::string type, op, what;
  double us;
  double bus_factor;  // busbw = algbw * bus_factor
  long wrong;         // -1: not checked
  double ratio;       // <= 0: none (a baseline row)
};

void print_header(const char* device, int nccl_version) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::printf("# gj_gpu_bench %s: %d rank(s), device %s, NCCL %d.%d.%d\n", date, g_size, device,
              nccl_version / 10000, nccl_version / 100 % 100, nccl_version % 100);
  std::printf("# ratio: baseline time / our time (>= 1.00: ours is as fast); baselines show '-'\n");
  std::printf("%12s %12s %6s %5s %-22s %11s %11s %11s %7s %6s\n", "size(B)", "count", "type", "op", "what",
              "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong", "ratio");
}

void print_row(const Row& r) {
  if (g_rank != 0) return;
  const double algbw = r.us > 0 ? static_cast<double>(r.bytes) / (r.us * 1e3) : 0;
  char wrong[24], ratio[16];
  if (r.wrong < 0) std::snprintf(wrong, sizeof wrong, "-"); else std::snprintf(wrong, sizeof wrong, "%ld", r.wrong);
  if (r.ratio <= 0) std::snprintf(ratio, sizeof ratio, "-"); else std::snprintf(ratio, sizeof ratio, "%.2f", r.ratio);
  std::printf("%12zu %12zu %6s %5s %-22s %11.2f %11.2f %11.2f %7s %6s\n", r.bytes, r.count, r.type.c_str(),
              r.op.c_str(), r.what.c_str(), r.us, algbw, algbw * r.bus_factor, wrong, ratio);
  std::fflush(stdout);
}

// Microseconds per call of f on stream s: warm-up, then iters calls between two events; the
// slowest rank's time.
double time_us(cudaStream_t s, int iters, const std::function<void()>& f) {
  for (int i = 0; i < std::max(2, iters / 10); ++i) f();
  cuda_ok(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  MPI_Barrier(MPI_COMM_WORLD);
  cudaEvent_t start, stop;
  cuda_ok(cudaEventCreate(&start), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&stop), "cudaEventCreate");
  cuda_ok(cudaEventRecord(start, s), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) f();
  cuda_ok(cudaEventRecord(stop, s), "cudaEventRecord");
  cuda_ok(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  cuda_ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  double us = 1e3 * ms / iters, slowest = us;
  MPI_Allreduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

int iters_for(std::size_t bytes) {
  if (g_quick) return 5;
  return bytes >= (std::size_t{64} << 20) ? 10 : bytes >= (std::size_t{1} << 20) ? 30 : 100;
}

// Best of two alternating rounds of a (ours) and b (baseline).
std::pair<double, double> ab(cudaStream_t s, int iters, const std::function<void()>& a, const std::function<void()>& b) {
  double ta = 1e300, tb = 1e300;
  for (int round = 0; round < 2; ++round) {
    ta = std::min(ta, time_us(s, iters, a));
    tb = std::min(tb, time_us(s, iters, b));
  }
  return {ta, tb};
}

// Host representation of value v in dtype (f32 or bf16 here).
std::vector<unsigned char> filled(std::size_t count, gjDataType_t dtype, float v) {
  std::vector<unsigned char> h(count * gjDataTypeSize(dtype));
  if (dtype == gjFloat32) {
    for (std::size_t i = 0; i < count; ++i) std::memcpy(h.data() + 4 * i, &v, 4);
  } else {
    const __nv_bfloat16 b = __float2bfloat16_rn(v);
    for (std::size_t i = 0; i < count; ++i) std::memcpy(h.data() + 2 * i, &b, 2);
  }
  return h;
}

long count_wrong(const void* dev, std::size_t count, gjDataType_t dtype, float want) {
  const auto expect = filled(1, dtype, want);
  const std::size_t es = expect.size();
  std::vector<unsigned char> got(count * es);
  cuda_ok(cudaMemcpy(got.data(), dev, got.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)");
  long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += std::memcmp(got.data() + i * es, expect.data(), es) != 0;
  return wrong;
}

void bench_allreduce(gjComm_t comm, ncclComm_t raw, cudaStream_t s, std::size_t max_bytes) {
  const double bus = g_size > 1 ? 2.0 * (g_size - 1) / g_size : 0.0;
  const float mine = static_cast<float>(g_rank + 1), sum = static_cast<float>(g_size * (g_size + 1) / 2);
  for (const gjDataType_t dtype : {gjFloat32, gjBfloat16}) {
    const std::size_t es = gjDataTypeSize(dtype);
    const ncclDataType_t nt = dtype == gjFloat32 ? ncclFloat32 : ncclBfloat16;
    const char* tname = dtype == gjFloat32 ? "float" : "bf16";
    Device send(max_bytes), recv(max_bytes);
    const auto h = filled(max_bytes / es, dtype, mine);
    cuda_ok(cudaMemcpy(send.p, h.data(), h.size(), cudaMemcpyHostToDevice), "cudaMemcpy(H2D)");
    for (std::size_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
      const std::size_t count = std::max<std::size_t>(1, bytes / es), nb = count * es;
      auto ours = [&] { gj_ok(gjAllReduce(send.p, recv.p, count, dtype, gjSum, comm, s), comm, "gjAllReduce"); };
      auto base = [&] { nccl_ok(ncclAllReduce(send.p, recv.p, count, nt, ncclSum, raw, s), "ncclAllReduce"); };
      const auto [t_ours, t_base] = ab(s, iters_for(nb), ours, base);
      base();
      cuda_ok(cudaStreamSynchronize(s), "sync");
      const long wrong_base = count_wrong(recv.p, count, dtype, sum);
      ours();
      cuda_ok(cudaStreamSynchronize(s), "sync");
      const long wrong_ours = count_wrong(recv.p, count, dtype, sum);
      print_row({nb, count, tname, "sum", "allreduce nccl", t_base, bus, wrong_base, 0});
      print_row({nb, count, tname, "sum", "allreduce gj", t_ours, bus, wrong_ours, t_base / t_ours});
    }
  }
}

void bench_grouped(gjComm_t comm, ncclComm_t raw, cudaStream_t s) {
  const auto sizes = gj::bench::resnet50_gradient_sizes();
  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  const int n = static_cast<int>(sizes.size());
  Device send(total * 4), recv(total * 4);
  const auto h = filled(total, gjFloat32, static_cast<float>(g_rank + 1));
  cuda_ok(cudaMemcpy(send.p, h.data(), h.size(), cudaMemcpyHostToDevice), "cudaMemcpy(H2D)");
  std::vector<const void*> sends;
  std::vector<void*> recvs;
  for (std::size_t off = 0, i = 0; i < sizes.size(); off += sizes[i], ++i) {
    sends.push_back(send.c() + 4 * off);
    recvs.push_back(recv.c() + 4 * off);
  }
  auto grouped = [&] {
    gj_ok(gjGroupedAllReduce(sends.data(), recvs.data(), sizes.data(), n, gjFloat32, gjSum, comm, s), comm,
          "gjGroupedAllReduce");
  };
  auto per_tensor = [&] {
    for (int i = 0; i < n; ++i) {
      nccl_ok(ncclAllReduce(sends[i], recvs[i], sizes[i], ncclFloat32, ncclSum, raw, s), "ncclAllReduce");
    }
  };
  auto nccl_group = [&] {
    nccl_ok(ncclGroupStart(), "ncclGroupStart");
    per_tensor();
    nccl_ok(ncclGroupEnd(), "ncclGroupEnd");
  };
  const int iters = g_quick ? 3 : 20;
  const auto [t_grouped, t_per_tensor] = ab(s, iters, grouped, per_tensor);
  const double t_group = time_us(s, iters, nccl_group);
  grouped();
  cuda_ok(cudaStreamSynchronize(s), "sync");
  const long wrong = count_wrong(recv.p, total, gjFloat32, static_cast<float>(g_size * (g_size + 1) / 2));
  const double bus = g_size > 1 ? 2.0 * (g_size - 1) / g_size : 0.0;
  print_row({total * 4, total, "float", "sum", "resnet50 per-tensor", t_per_tensor, bus, -1, 0});
  print_row({total * 4, total, "float", "sum", "resnet50 ncclGroup", t_group, bus, -1, 0});
  print_row({total * 4, total, "float", "sum", "resnet50 gj grouped", t_grouped, bus, wrong, t_per_tensor / t_grouped});
}

void bench_kernels(cudaStream_t s, std::size_t max_bytes) {
  auto memcpy_us = [&](std::size_t bytes, Device& a, Device& b) {
    return time_us(s, iters_for(bytes), [&] {
      cuda_ok(cudaMemcpyAsync(b.p, a.p, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
    });
  };
  // Fusion pack/unpack of ResNet-50's gradients: f32, bf16, and bf16 with odd lengths (2-byte
  // aligned offsets in the fusion buffer: the narrow-copy path).
  const auto sizes = gj::bench::resnet50_gradient_sizes();
  struct Case { const char* type; std::size_t es; std::size_t extra; const char* what; };
  for (const Case c : {Case{"float", 4, 0, "pack"}, Case{"bf16", 2, 0, "pack"}, Case{"bf16", 2, 1, "pack odd-length"}}) {
    std::vector<std::size_t> bytes;
    for (std::size_t n : sizes) bytes.push_back((n + c.extra) * c.es);
    const std::size_t total = std::accumulate(bytes.begin(), bytes.end(), std::size_t{0});
    Device tensors(total + 256 * bytes.size()), fusion(total), out(total + 256 * bytes.size());
    std::vector<unsigned char> pattern(total + 256 * bytes.size());
    for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<unsigned char>(i * 131 + 7);
    cuda_ok(cudaMemcpy(tensors.p, pattern.data(), pattern.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
    std::vector<const void*> srcs;
    std::vector<void*> dsts;
    std::vector<unsigned char> expect;
    for (std::size_t off = 0, i = 0; i < bytes.size(); off += (bytes[i] + 255) / 256 * 256, ++i) {
      srcs.push_back(tensors.c() + off);
      dsts.push_back(out.c() + off);
      expect.insert(expect.end(), pattern.begin() + static_cast<long>(off), pattern.begin() + static_cast<long>(off + bytes[i]));
    }
    const int n = static_cast<int>(bytes.size());
    const double t_copy = memcpy_us(total, tensors, fusion);
    const double t_pack = time_us(s, iters_for(total), [&] { gj::cuda::pack(fusion.p, srcs.data(), bytes.data(), n, s); });
    const double t_unpack = time_us(s, iters_for(total), [&] { gj::cuda::unpack(dsts.data(), fusion.p, bytes.data(), n, s); });
    std::vector<unsigned char> got(total);
    cuda_ok(cudaMemcpy(got.data(), fusion.p, total, cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)");
    long wrong = 0;
    for (std::size_t i = 0; i < total; ++i) wrong += got[i] != expect[i];
    print_row({total, total / c.es, c.type, "-", "memcpy D2D", t_copy, 2.0, -1, 0});
    print_row({total, total / c.es, c.type, "-", std::string(c.what) + " 161", t_pack, 2.0, wrong, t_copy / t_pack});
    print_row({total, total / c.es, c.type, "-", std::string(c.what == std::string("pack") ? "unpack" : "unpack odd-length") + " 161",
               t_unpack, 2.0, -1, t_copy / t_unpack});
  }
  // f16/bf16 scale (gjAvg's pre-scaling) over max_bytes: 2.0 * 0.5 = 1.0 exactly.
  Device in(max_bytes), out(max_bytes);
  const double t_copy = memcpy_us(max_bytes, in, out);
  print_row({max_bytes, max_bytes / 2, "half", "-", "memcpy D2D", t_copy, 2.0, -1, 0});
  for (const gjDataType_t dtype : {gjFloat16, gjBfloat16}) {
    const std::size_t count = max_bytes / 2;
    std::vector<unsigned short> h(count);
    const unsigned short two = 0x4000;  // 2.0 in both f16 and bf16
    std::fill(h.begin(), h.end(), two);
    cuda_ok(cudaMemcpy(in.p, h.data(), max_bytes, cudaMemcpyHostToDevice), "cudaMemcpy(H2D)");
    const double t = time_us(s, iters_for(max_bytes), [&] { gj::cuda::scale(out.p, in.p, count, dtype, 0.5, s); });
    cuda_ok(cudaMemcpy(h.data(), out.p, max_bytes, cudaMemcpyDeviceToHost), "cudaMemcpy(D2H)");
    const unsigned short one = dtype == gjFloat16 ? 0x3C00 : 0x3F80;
    const long wrong = static_cast<long>(std::count_if(h.begin(), h.end(), [&](unsigned short x) { return x != one; }));
    print_row({max_bytes, count, dtype == gjFloat16 ? "half" : "bf16", "-", "scale x0.5", t, 2.0, wrong, t_copy / t});
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t max_bytes = std::size_t{256} << 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      g_quick = true;
      max_bytes = std::size_t{1} << 20;
    } else if (std::strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc) {
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: mpiexec -np <GPUs> %s [--max-bytes N] [--quick]\n", argv[0]);
      return 2;
    }
  }
  if (gj::test::skip_without_devices(1, "gj_gpu_bench")) return gj::test::kSkip;
  const gj::test::GpuRank me = gj::test::open_gpu_rank_or_exit("gj_gpu_bench");
  gjComm_t comm = me.comm;
  g_rank = me.rank;
  g_size = me.size;
  if (me.device_backend != gjBackendNccl) die("device buffers do not use the NCCL backend (GJ_COLL_BACKEND?)");

  // The baseline's own NCCL communicator, bootstrapped the usual way, with the library's search
  // of this process's settings (the same libnccl.so.2 the library found).
  (void)gj::nccl::library(gj::parse_config(gj::snapshot_coll_env()).nccl);
  ncclUniqueId id{};
  if (g_rank == 0) nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t raw = nullptr;
  nccl_ok(ncclCommInitRank(&raw, g_size, id, g_rank), "ncclCommInitRank");
  cudaStream_t s = nullptr;
  cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");

  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, me.device), "cudaGetDeviceProperties");
  int version = 0;
  nccl_ok(ncclGetVersion(&version), "ncclGetVersion");
  if (g_rank == 0) print_header(prop.name, version);
  bench_allreduce(comm, raw, s, max_bytes);
  bench_grouped(comm, raw, s);
  bench_kernels(s, max_bytes);

  cuda_ok(cudaStreamDestroy(s), "cudaStreamDestroy");
  nccl_ok(ncclCommDestroy(raw), "ncclCommDestroy");
  gj_ok(gjCommDestroy(comm), nullptr, "gjCommDestroy");
  gj_ok(gjFinalize(), nullptr, "gjFinalize");
  return 0;
}
