// Fusion benchmark: ResNet-50's 161 gradient tensors (25.6 M parameters, shapes generated in
// code) reduced with one gjGroupedAllReduce against one MPI_Allreduce per tensor (what a
// training loop without fusion does), and one gjAllReduce per tensor for reference.
//
//   mpiexec --allow-run-as-root -np 2 build/bench/gj_fusion_bench [--type f32|bf16]
//       [--rounds 3] [--iters 5] [--scale 1] [--fusion-bytes <library default>]
//       [--shm-chunk-bytes <engine default>]
//
// In place (sendbuffs == recvbuffs), op sum. time = slowest rank's mean per step (all 161
// tensors), best of `rounds` alternating batches; speedup = per-tensor MPI time / time.
// --scale N divides every tensor size by N (rounded up), for quick runs. --shm-chunk-bytes sets
// the pipeline chunk of the two "shm engine" rows (the library's own path keeps the default).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"
#include "gpu/resnet50_shapes.h"
#include "shm/shm_allreduce.h"

namespace {

struct Tensors {
  gjDataType_t dtype;
  std::size_t elem;
  std::vector<std::vector<unsigned char>> data;
  std::vector<std::size_t> counts;
  std::vector<void*> ptrs;

  Tensors(gjDataType_t t, const std::vector<std::size_t>& sizes) : dtype(t), elem(t == gjFloat32 ? 4 : 2) {
    for (std::size_t n : sizes) {
      data.emplace_back(n * elem);
      counts.push_back(n);
    }
    for (auto& d : data) ptrs.push_back(d.data());
  }
  std::size_t bytes() const {
    std::size_t b = 0;
    for (std::size_t n : counts) b += n * elem;
    return b;
  }
  // (rank + 1) * (i % 13): the sum over n ranks, n(n+1)/2 * (i % 13), is exact.
  void fill(int rank) {
    for (std::size_t k = 0; k < data.size(); ++k) {
      for (std::size_t i = 0; i < counts[k]; ++i) {
        const auto v = static_cast<float>((rank + 1) * static_cast<int>(i % 13));
        if (dtype == gjFloat32) std::memcpy(&data[k][i * 4], &v, 4);
        else {
          const std::uint16_t b = gj::bench::to_bf16(v);
          std::memcpy(&data[k][i * 2], &b, 2);
        }
      }
    }
  }
  long long wrong(int nranks) const {
    const int tri = nranks * (nranks + 1) / 2;
    long long bad = 0;
    for (std::size_t k = 0; k < data.size(); ++k) {
      for (std::size_t i = 0; i < counts[k]; ++i) {
        float got;
        if (dtype == gjFloat32) std::memcpy(&got, &data[k][i * 4], 4);
        else {
          std::uint16_t b;
          std::memcpy(&b, &data[k][i * 2], 2);
          got = gj::bench::from_bf16(b);
        }
        bad += got != static_cast<float>(tri * static_cast<int>(i % 13));
      }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return bad;
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  std::string type;
  int rounds = 0, iters = 0;
  long long scale = 1, fusion_bytes = -1, chunk_bytes = 0;
  try {
    gj::bench::Args args(argc, argv);
    type = args.str("type", "f32");
    rounds = static_cast<int>(args.num("rounds", 3));
    iters = static_cast<int>(args.num("iters", 5));
    scale = args.num("scale", 1);
    fusion_bytes = args.num("fusion-bytes", -1);
    chunk_bytes = args.num("shm-chunk-bytes", static_cast<long long>(gj::shm::ShmOptions{}.chunk_bytes));
    args.reject_unknown();
    if (type != "f32" && type != "bf16") throw std::invalid_argument("--type " + type + ": use f32 or bf16");
    if (rounds < 1 || iters < 1 || scale < 1) throw std::invalid_argument("--rounds, --iters, --scale must be >= 1");
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "gj_fusion_bench: %s\n", e.what());
    MPI_Finalize();
    return 64;
  }

  std::vector<std::size_t> sizes = gj::bench::resnet50_gradient_sizes();
  for (auto& n : sizes) n = (n + static_cast<std::size_t>(scale) - 1) / static_cast<std::size_t>(scale);
  Tensors g(type == "f32" ? gjFloat32 : gjBfloat16, sizes);
  const int nt = static_cast<int>(sizes.size());

  MPI_Comm world = MPI_COMM_WORLD;
  gjComm_t comm = nullptr;
  gj::bench::check(gjCommInitMpi(&comm, &world), nullptr, "gjCommInitMpi");
  if (fusion_bytes >= 0) {
    gj::bench::check(gjCommSetFusionThreshold(comm, static_cast<std::size_t>(fusion_bytes)), comm,
                     "gjCommSetFusionThreshold");
  }
  std::size_t threshold = 0;
  gjCommGetFusionThreshold(comm, &threshold);
  auto bf16_owner = std::make_unique<gj::bench::Bf16Mpi>();  // freed before MPI_Finalize
  const gj::bench::Bf16Mpi& bf16 = *bf16_owner;
  const MPI_Datatype mpi_type = g.dtype == gjFloat32 ? MPI_FLOAT : bf16.type;
  const MPI_Op mpi_op = g.dtype == gjFloat32 ? MPI_SUM : bf16.sum;

  struct Method {
    const char* name;
    double time = std::numeric_limits<double>::infinity();
    long long wrong = 0;
  };
  // The shm engine's list call alone (what gjGroupedAllReduce does on this path; see
  // docs/benchmarks.md), when the ranks share a node, once with each way of waiting for peers
  // forced (the library picks sleeping when the ranks outnumber the CPUs).
  using Wait = gj::shm::ShmOptions::Wait;
  std::unique_ptr<gj::shm::ShmAllreduce> engines[2];
  for (Wait w : {Wait::Spin, Wait::Sleep}) {
    gj::shm::ShmOptions opt;
    opt.wait = w;
    opt.chunk_bytes = static_cast<std::size_t>(chunk_bytes);
    engines[w == Wait::Sleep] = gj::shm::ShmAllreduce::create(MPI_COMM_WORLD, opt);
  }
  Method methods[] = {{"per-tensor MPI_Allreduce"},
                      {"per-tensor gjAllReduce"},
                      {"gjGroupedAllReduce"},
                      {"shm engine, spinning waits"},
                      {"shm engine, sleeping waits"}};
  const int nmethods = engines[0] && engines[1] ? 5 : 3;
  auto step = [&](int m) {
    if (m == 0) {
      for (int k = 0; k < nt; ++k) {
        MPI_Allreduce(MPI_IN_PLACE, g.ptrs[k], static_cast<int>(g.counts[k]), mpi_type, mpi_op, MPI_COMM_WORLD);
      }
    } else if (m == 1) {
      for (int k = 0; k < nt; ++k) {
        gj::bench::check(gjAllReduce(g.ptrs[k], g.ptrs[k], g.counts[k], g.dtype, gjSum, comm, nullptr), comm,
                         "gjAllReduce");
      }
    } else if (m >= 3) {
      engines[m - 3]->allreduce_group(g.ptrs.data(), g.ptrs.data(), g.counts.data(), nt, g.dtype, gjSum);
    } else {
      gj::bench::check(gjGroupedAllReduce(g.ptrs.data(), g.ptrs.data(), g.counts.data(), nt, g.dtype, gjSum, comm,
                                          nullptr),
                       comm, "gjGroupedAllReduce");
    }
  };

  for (int m = 0; m < nmethods; ++m) {  // warm-up, and the correctness of one step
    g.fill(rank);
    step(m);
    methods[m].wrong = g.wrong(nranks);
  }
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < nmethods; ++k) {
      const int m = (round + k) % nmethods;  // rotate which method goes first
      g.fill(rank);                   // fresh gradients each batch (in-place sums grow)
      methods[m].time = std::min(methods[m].time, gj::bench::time_batch(MPI_COMM_WORLD, iters, [&] { step(m); }));
    }
  }

  const double base = methods[0].time;
  if (rank == 0) {
    std::printf("# gj_fusion_bench: ranks=%d tensors=%d params=%zu bytes=%zu type=%s op=sum in-place "
                "fusion_bytes=%zu %s\n",
                nranks, nt, g.bytes() / g.elem, g.bytes(), type.c_str(), threshold, gj::bench::machine_line().c_str());
    std::printf("# time: slowest rank's mean per step, best of %d alternating batches of %d steps\n", rounds, iters);
    std::printf("# %-26s %10s %12s %8s %9s\n", "method", "time(ms)", "algbw(GB/s)", "#wrong", "speedup");
    for (int k = 0; k < nmethods; ++k) {
      const Method& m = methods[k];
      std::printf("  %-26s %10.2f %12.3f %8lld %8.2fx\n", m.name, m.time * 1e3,
                  static_cast<double>(g.bytes()) / m.time / 1e9, m.wrong, base / m.time);
    }
  }
  long long wrong = 0;
  for (const Method& m : methods) wrong += m.wrong;
  for (auto& e : engines) e.reset();
  gjCommDestroy(comm);
  bf16_owner.reset();
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
