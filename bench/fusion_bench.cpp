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

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"
#include "shm/shm_allreduce.h"

namespace gb = gj::bench;

int main(int argc, char** argv) {
  const gb::MpiSession mpi(&argc, &argv);
  gb::ElemType type;
  int rounds = 0, iters = 0;
  long long scale = 1, fusion_bytes = -1, chunk_bytes = 0;
  const bool ok = gb::read_options("gj_fusion_bench", mpi, argc, argv, [&](const gb::Args& args) {
    type = gb::parse_type("type", args.str("type", "f32"));
    rounds = static_cast<int>(args.num("rounds", 3));
    iters = static_cast<int>(args.num("iters", 5));
    scale = args.num("scale", 1);
    fusion_bytes = args.num("fusion-bytes", -1);
    chunk_bytes = args.num("shm-chunk-bytes", static_cast<long long>(gj::shm::ShmOptions{}.chunk_bytes));
    gb::require_positive({{"rounds", rounds}, {"iters", iters}, {"scale", scale}});
  });
  if (!ok) return gb::kUsage;

  gb::Gradients g(type.dtype, static_cast<std::size_t>(scale));
  const int nt = g.size();
  const gb::GjComm comm;
  if (fusion_bytes >= 0) {
    gb::check(gjCommSetFusionThreshold(comm.get(), static_cast<std::size_t>(fusion_bytes)), comm.get(),
              "gjCommSetFusionThreshold");
  }
  std::size_t threshold = 0;
  gjCommGetFusionThreshold(comm.get(), &threshold);
  const gb::Bf16Mpi bf16;
  const MPI_Datatype mpi_type = bf16.type_of(g.dtype);
  const MPI_Op mpi_op = bf16.sum_of(g.dtype);

  std::vector<gb::Step> steps;
  steps.push_back({"per-tensor MPI_Allreduce", [&] {
                     for (int k = 0; k < nt; ++k) {
                       MPI_Allreduce(MPI_IN_PLACE, g.ptrs[k], static_cast<int>(g.counts[k]), mpi_type, mpi_op,
                                     MPI_COMM_WORLD);
                     }
                   }});
  steps.push_back({"per-tensor gjAllReduce", [&] {
                     for (int k = 0; k < nt; ++k) {
                       gb::check(gjAllReduce(g.ptrs[k], g.ptrs[k], g.counts[k], g.dtype, gjSum, comm.get(), nullptr),
                                 comm.get(), "gjAllReduce");
                     }
                   }});
  steps.push_back({"gjGroupedAllReduce", [&] {
                     gb::check(gjGroupedAllReduce(g.ptrs.data(), g.ptrs.data(), g.counts.data(), nt, g.dtype, gjSum,
                                                  comm.get(), nullptr),
                               comm.get(), "gjGroupedAllReduce");
                   }});
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
  if (engines[0] && engines[1]) {
    for (int e = 0; e < 2; ++e) {
      steps.push_back({e == 0 ? "shm engine, spinning waits" : "shm engine, sleeping waits", [&, e] {
                         engines[e]->allreduce_group(g.ptrs.data(), g.ptrs.data(), g.counts.data(), nt, g.dtype,
                                                     gjSum);
                       }});
    }
  }
  gb::measure_steps(steps, g, mpi, rounds, iters);

  const double base = steps[0].result.time;
  long long wrong = 0;
  if (mpi.rank == 0) {
    std::printf("# gj_fusion_bench: ranks=%d tensors=%d params=%zu bytes=%zu type=%s op=sum in-place "
                "fusion_bytes=%zu %s\n",
                mpi.nranks, nt, g.bytes() / g.elem, g.bytes(), type.name.c_str(), threshold,
                gb::machine_line().c_str());
    std::printf("# time: slowest rank's mean per step, best of %d alternating batches of %d steps\n", rounds, iters);
    std::printf("# %-26s %10s %12s %8s %9s\n", "method", "time(ms)", "algbw(GB/s)", "#wrong", "speedup");
  }
  for (const gb::Step& s : steps) {
    wrong += s.result.wrong;
    if (mpi.rank == 0) {
      std::printf("  %-26s %10.2f %12.3f %8lld %8.2fx\n", s.name, s.result.time * 1e3,
                  static_cast<double>(g.bytes()) / s.result.time / 1e9, s.result.wrong, base / s.result.time);
    }
  }
  return wrong == 0 ? 0 : 1;
}
