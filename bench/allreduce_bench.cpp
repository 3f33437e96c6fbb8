// Allreduce benchmark in the nccl-tests format: gjAllReduce on host buffers against plain
// MPI_Allreduce on the same buffers, runs alternating, sizes min..max bytes (x2 steps).
//
//   mpiexec --allow-run-as-root -np 2 build/bench/gj_allreduce_bench [--types f32,bf16]
//       [--minbytes 4] [--maxbytes 256M] [--rounds 5] [--iters 0=auto] [--impl gj|shm]
//
// time = the slowest rank's mean per call, best of `rounds` alternating batches;
// algbw = bytes / time; busbw = algbw * 2(n-1)/n; #wrong = elements differing from the
// exact result after the timed calls; ratio = MPI time / gj time (> 1: gj is faster).
// --impl shm times gj::shm::ShmAllreduce directly (the engine without the library around it).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"
#include "shm/shm_allreduce.h"

namespace gb = gj::bench;

int main(int argc, char** argv) {
  const gb::MpiSession mpi(&argc, &argv);
  std::vector<gb::ElemType> types;
  gb::Sweep sweep;
  std::string impl;
  const bool ok = gb::read_options("gj_allreduce_bench", mpi, argc, argv, [&](const gb::Args& args) {
    types = gb::parse_types("types", args.str("types", "f32,bf16"));
    sweep = gb::read_sweep(args, 4, 256LL << 20);
    impl = args.str("impl", "gj");
    if (impl != "gj" && impl != "shm") throw std::invalid_argument("--impl " + impl + ": use gj or shm");
  });
  if (!ok) return gb::kUsage;

  std::optional<gb::GjComm> comm;
  std::unique_ptr<gj::shm::ShmAllreduce> engine;
  if (impl == "gj") {
    comm.emplace();
  } else {
    std::string why;
    engine = gj::shm::ShmAllreduce::create(MPI_COMM_WORLD, &why);
    if (!engine) {
      if (mpi.rank == 0) std::fprintf(stderr, "gj_allreduce_bench: ShmAllreduce::create: %s\n", why.c_str());
      MPI_Abort(MPI_COMM_WORLD, gb::kUnavailable);
    }
  }
  const gb::Bf16Mpi bf16;

  if (mpi.rank == 0) {
    std::printf("# gj_allreduce_bench: ranks=%d impl=%s op=sum out-of-place %s\n", mpi.nranks, impl.c_str(),
                gb::machine_line().c_str());
    std::printf("# time: slowest rank's mean per call, best of %d alternating batches; ratio = MPI time / %s time\n",
                sweep.rounds, impl.c_str());
  }
  gb::VsMpiTable table(mpi.rank);
  for (const gb::ElemType& t : types) {
    const std::size_t max_count = sweep.max_bytes / t.size;
    std::vector<unsigned char> send(std::max<std::size_t>(max_count, 1) * t.size);
    std::vector<unsigned char> recv(send.size());
    for (std::size_t i = 0; i < max_count; ++i) gb::store(t.dtype, send.data(), i, gb::input_value(mpi.rank, i));
    std::memset(recv.data(), 0, recv.size());  // touch every page before timing

    const MPI_Datatype mpi_type = bf16.type_of(t.dtype);
    const MPI_Op mpi_op = bf16.sum_of(t.dtype);
    table.header(gb::strf("%12s %12s %6s %6s", "size", "count", "type", "redop"),
                 gb::strf("%12s %12s %6s %6s", "(B)", "(elements)", "", ""), "MPI (us)");
    for (std::size_t bytes = sweep.min_bytes; bytes <= sweep.max_bytes; bytes *= 2) {
      const std::size_t count = bytes / t.size;
      if (count == 0) continue;
      const gb::VsMpi r = gb::time_vs_mpi(
          sweep.rounds, gb::iters_for(bytes, sweep.fixed_iters),
          [&] {
            if (engine) engine->allreduce(send.data(), recv.data(), count, t.dtype, gjSum);
            else gb::check(gjAllReduce(send.data(), recv.data(), count, t.dtype, gjSum, comm->get(), nullptr),
                           comm->get(), "gjAllReduce");
          },
          [&] { MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), mpi_type, mpi_op, MPI_COMM_WORLD); },
          [&] { std::memset(recv.data(), 0, count * t.size); },
          [&] {
            long long wrong = 0;
            for (std::size_t i = 0; i < count; ++i) {
              wrong += gb::load(t.dtype, recv.data(), i) != gb::sum_value(mpi.nranks, i);
            }
            return gb::sum_over_ranks(wrong);
          });
      table.row(gb::strf("%12zu %12zu %6s %6s", bytes, count, t.name.c_str(), "sum"), static_cast<double>(bytes),
                2.0 * (mpi.nranks - 1) / mpi.nranks, r);
    }
  }
  table.summary();
  return table.wrong() == 0 ? 0 : 1;
}
