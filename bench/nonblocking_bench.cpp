// Nonblocking benchmark: ResNet-50's 161 gradient tensors (25.6 M parameters) issued as one
// gjIallReduce each (as a framework's gradient hooks do) and then waited for, against one
// gjGroupedAllReduce over all of them (goal: within 10 %) and against one MPI_Iallreduce per
// tensor + MPI_Waitall (goal: gj >= 2x faster). The gj requests run with the communicator's
// fusion (queued requests fused after an agreement between ranks) and without it.
//
//   mpiexec --allow-run-as-root -np 2 build/bench/gj_nonblocking_bench [--type f32|bf16]
//       [--rounds 3] [--iters 5] [--scale 1]
//
// In place, op sum. time = slowest rank's mean per step (all 161 tensors), best of `rounds`
// alternating batches. vs grouped = time / grouped time; vs MPI_Iallreduce = MPI time / time.
// #wrong: elements differing from the exact sum after one step from fresh inputs.
// --scale N divides every tensor size by N (rounded up), for quick runs.
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"

namespace gb = gj::bench;

int main(int argc, char** argv) {
  const gb::MpiSession mpi(&argc, &argv, /*thread_multiple=*/true);  // gj's progress thread needs it
  gb::ElemType type;
  int rounds = 0, iters = 0, scale = 1;
  const bool ok = gb::read_options("gj_nonblocking_bench", mpi, argc, argv, [&](const gb::Args& args) {
    type = gb::parse_type("type", args.str("type", "f32"));
    rounds = static_cast<int>(args.num("rounds", 3));
    iters = static_cast<int>(args.num("iters", 5));
    scale = static_cast<int>(args.num("scale", 1));
    gb::require_positive({{"rounds", rounds}, {"iters", iters}, {"scale", scale}});
  });
  if (!ok) return gb::kUsage;
  if (!mpi.thread_multiple) {
    if (mpi.rank == 0) std::fprintf(stderr, "gj_nonblocking_bench: MPI lacks MPI_THREAD_MULTIPLE\n");
    return gb::kUnavailable;
  }
  const gjDataType_t dtype = type.dtype;
  gb::Gradients t(dtype, static_cast<std::size_t>(scale));
  const int nt = t.size();
  const gb::GjComm comm;
  std::size_t threshold = 0;
  gjCommGetFusionThreshold(comm.get(), &threshold);
  const gb::Bf16Mpi bf16;
  const MPI_Datatype mpi_type = bf16.type_of(dtype);
  const MPI_Op mpi_op = bf16.sum_of(dtype);

  std::vector<gjRequest_t> reqs(t.counts.size());
  std::vector<MPI_Request> mreqs(t.counts.size());
  auto nonblocking = [&](std::size_t fusion) {
    return [&, fusion] {
      gjCommSetFusionThreshold(comm.get(), fusion);
      for (int k = 0; k < nt; ++k) {
        gb::check(gjIallReduce(t.ptrs[k], t.ptrs[k], t.counts[k], dtype, gjSum, 1.0, 1.0, comm.get(), nullptr,
                               &reqs[k]),
                  comm.get(), "gjIallReduce");
      }
      for (int k = 0; k < nt; ++k) gb::check(gjWait(reqs[k]), nullptr, "gjWait");
    };
  };
  std::vector<gb::Step> rows;
  rows.push_back({"gjGroupedAllReduce (one call)", [&] {
                    gjCommSetFusionThreshold(comm.get(), threshold);
                    gb::check(gjGroupedAllReduce(t.ptrs.data(), t.ptrs.data(), t.counts.data(), nt, dtype, gjSum,
                                                 comm.get(), nullptr),
                              comm.get(), "gjGroupedAllReduce");
                  }});
  rows.push_back({"gjIallReduce x161, fused", nonblocking(threshold)});
  rows.push_back({"gjIallReduce x161, unfused", nonblocking(0)});
  rows.push_back({"gjAllReduce x161 (blocking)", [&] {
                    for (int k = 0; k < nt; ++k) {
                      gb::check(gjAllReduce(t.ptrs[k], t.ptrs[k], t.counts[k], dtype, gjSum, comm.get(), nullptr),
                                comm.get(), "gjAllReduce");
                    }
                  }});
  rows.push_back({"MPI_Iallreduce x161 + Waitall", [&] {
                    for (int k = 0; k < nt; ++k) {
                      MPI_Iallreduce(MPI_IN_PLACE, t.ptrs[k], static_cast<int>(t.counts[k]), mpi_type, mpi_op,
                                     MPI_COMM_WORLD, &mreqs[k]);
                    }
                    MPI_Waitall(nt, mreqs.data(), MPI_STATUSES_IGNORE);
                  }});
  gb::measure_steps(rows, t, mpi, rounds, iters);

  long long total_wrong = 0;
  if (mpi.rank == 0) {
    std::printf("# gj_nonblocking_bench: ranks=%d type=%s tensors=%d bytes=%zu op=sum in-place %s\n", mpi.nranks,
                type.name.c_str(), nt, t.bytes(), gb::machine_line().c_str());
    std::printf("# time: slowest rank's mean per step, best of %d batches of %d; fusion threshold %zu B\n", rounds,
                iters, threshold);
    std::printf("# %-32s %10s %8s %10s %16s %7s\n", "", "time (ms)", "GB/s", "vs grouped", "vs MPI_Iallreduce",
                "#wrong");
  }
  const double grouped = rows[0].result.time, mpi_time = rows.back().result.time;
  for (const gb::Step& r : rows) {
    total_wrong += r.result.wrong;
    if (mpi.rank == 0) {
      std::printf("  %-32s %10.2f %8.3f %10.2f %16.2f %7lld\n", r.name, r.result.time * 1e3,
                  static_cast<double>(t.bytes()) / r.result.time / 1e9, r.result.time / grouped,
                  mpi_time / r.result.time, r.result.wrong);
    }
  }
  if (mpi.rank == 0) {
    std::printf("# fused requests: %.2fx the grouped call's time (goal <= 1.10), %.2fx faster than MPI_Iallreduce "
                "(goal >= 2)\n",
                rows[1].result.time / grouped, mpi_time / rows[1].result.time);
  }
  return total_wrong == 0 ? 0 : 1;
}
