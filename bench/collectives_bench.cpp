// Allgather, reduce-scatter and broadcast benchmark in the nccl-tests format: gjAllGather
// against MPI_Allgatherv, gjReduceScatter against MPI_Reduce_scatter and gjBroadcast (root 0)
// against MPI_Bcast on the same host buffers, runs alternating, sizes min..max bytes (x2
// steps; size = the whole gathered buffer / the whole reduce-scatter input / the broadcast
// buffer, as nccl-tests counts it).
//
//   mpiexec --allow-run-as-root -np 2 build/bench/gj_collectives_bench
//       [--ops allgather,reduce_scatter,broadcast] [--types f32,bf16] [--minbytes 1K] [--maxbytes 64M]
//       [--rounds 5] [--iters 0=auto]
//
// time = the slowest rank's mean per call, best of `rounds` alternating batches;
// algbw = size / time; busbw = algbw * (n-1)/n (allgather, reduce-scatter), algbw (broadcast);
// #wrong = elements differing from the exact result after the timed calls; ratio = MPI time /
// gj time (> 1: gj is faster).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"

namespace gb = gj::bench;

int main(int argc, char** argv) {
  const gb::MpiSession mpi(&argc, &argv);
  std::vector<gb::ElemType> types;
  std::vector<std::string> ops;
  gb::Sweep sweep;
  const bool ok = gb::read_options("gj_collectives_bench", mpi, argc, argv, [&](const gb::Args& args) {
    types = gb::parse_types("types", args.str("types", "f32,bf16"));
    ops = gb::split_list(args.str("ops", "allgather,reduce_scatter,broadcast"));
    for (const std::string& s : ops) {
      if (s != "allgather" && s != "reduce_scatter" && s != "broadcast") {
        throw std::invalid_argument("--ops: '" + s + "' is not one of allgather, reduce_scatter, broadcast");
      }
    }
    sweep = gb::read_sweep(args, 1024, 64LL << 20);
  });
  if (!ok) return gb::kUsage;

  const gb::GjComm comm;
  const gb::Bf16Mpi bf16;
  if (mpi.rank == 0) {
    std::printf("# gj_collectives_bench: ranks=%d out-of-place %s\n", mpi.nranks, gb::machine_line().c_str());
    std::printf("# time: slowest rank's mean per call, best of %d alternating batches; ratio = MPI time / gj time\n",
                sweep.rounds);
  }
  gb::VsMpiTable table(mpi.rank);
  const std::size_t n = static_cast<std::size_t>(mpi.nranks);
  for (const std::string& op : ops) {
    const bool gather = op == "allgather", bcast = op == "broadcast";
    const char* peer = gather ? "Allgatherv" : bcast ? "Bcast" : "Red_scat";
    for (const gb::ElemType& t : types) {
      const MPI_Datatype mpi_type = bf16.type_of(t.dtype);
      const MPI_Op mpi_op = bf16.sum_of(t.dtype);
      const std::size_t max_total = sweep.max_bytes / t.size / n * n;
      std::vector<unsigned char> send(std::max<std::size_t>(max_total, n) * t.size);
      std::vector<unsigned char> recv(send.size());
      std::memset(recv.data(), 0, recv.size());
      table.header(gb::strf("%-14s %12s %12s %6s", "op", "size", "count", "type"),
                   gb::strf("%-14s %12s %12s %6s", "", "(B)", "(elements)", ""), peer);
      for (std::size_t bytes = sweep.min_bytes; bytes <= sweep.max_bytes; bytes *= 2) {
        const std::size_t per = bytes / t.size / n;  // elements per rank
        if (per == 0) continue;
        const std::size_t total = per * n;
        const std::vector<std::size_t> counts(n, per);
        const std::vector<int> icounts(n, static_cast<int>(per));
        std::vector<int> displs(n);
        for (std::size_t q = 0; q < n; ++q) displs[q] = static_cast<int>(q * per);
        // Inputs: allgather sends `per` elements, reduce-scatter sends `total`; broadcast's
        // buffer (recv) is `total` elements, root 0's values, refilled before each batch.
        for (std::size_t i = 0; i < (gather ? per : total); ++i) {
          gb::store(t.dtype, send.data(), i, gb::input_value(mpi.rank, i));
        }
        const auto reset = [&] {
          if (bcast && mpi.rank == 0) std::memcpy(recv.data(), send.data(), total * t.size);
          else std::memset(recv.data(), 0, (gather || bcast ? total : per) * t.size);
        };
        const gb::VsMpi r = gb::time_vs_mpi(
            sweep.rounds, gb::iters_for(bytes, sweep.fixed_iters),
            [&] {
              if (gather) {
                gb::check(gjAllGather(send.data(), recv.data(), per, t.dtype, comm.get(), nullptr), comm.get(),
                          "gjAllGather");
              } else if (bcast) {
                gb::check(gjBroadcast(recv.data(), total, t.dtype, 0, comm.get(), nullptr), comm.get(), "gjBroadcast");
              } else {
                gb::check(gjReduceScatter(send.data(), recv.data(), counts.data(), t.dtype, gjSum, 1.0, 1.0,
                                          comm.get(), nullptr),
                          comm.get(), "gjReduceScatter");
              }
            },
            [&] {
              if (gather) {
                MPI_Allgatherv(send.data(), static_cast<int>(per), mpi_type, recv.data(), icounts.data(),
                               displs.data(), mpi_type, MPI_COMM_WORLD);
              } else if (bcast) {
                MPI_Bcast(recv.data(), static_cast<int>(total), mpi_type, 0, MPI_COMM_WORLD);
              } else {
                MPI_Reduce_scatter(send.data(), recv.data(), icounts.data(), mpi_type, mpi_op, MPI_COMM_WORLD);
              }
            },
            reset,
            [&] {
              long long w = 0;
              if (gather) {
                for (std::size_t i = 0; i < total; ++i) {
                  w += gb::load(t.dtype, recv.data(), i) != gb::input_value(static_cast<int>(i / per), i % per);
                }
              } else if (bcast) {
                for (std::size_t i = 0; i < total; ++i) w += gb::load(t.dtype, recv.data(), i) != gb::input_value(0, i);
              } else {
                const std::size_t first = static_cast<std::size_t>(mpi.rank) * per;
                for (std::size_t i = 0; i < per; ++i) {
                  w += gb::load(t.dtype, recv.data(), i) != gb::sum_value(mpi.nranks, first + i);
                }
              }
              return gb::sum_over_ranks(w);
            });
        table.row(gb::strf("%-14s %12zu %12zu %6s", op.c_str(), total * t.size, total, t.name.c_str()),
                  static_cast<double>(total * t.size), bcast ? 1.0 : static_cast<double>(mpi.nranks - 1) / mpi.nranks,
                  r);
      }
    }
  }
  table.summary();
  return table.wrong() == 0 ? 0 : 1;
}
