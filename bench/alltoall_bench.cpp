// Alltoall benchmark in the nccl-tests format: gjAllToAllV against MPI_Alltoallv on the same
// host buffers, runs alternating, sizes min..max bytes (x2 steps; size = this rank's whole send
// buffer, as nccl-tests counts alltoall), equal splits and uneven ones (rank q gets a share
// proportional to q + 1, Horovod's typical expert-routing shape).
//
//   mpiexec --allow-run-as-root -np 2 build/bench/gj_alltoall_bench [--types f32,bf16]
//       [--minbytes 1K] [--maxbytes 64M] [--rounds 5] [--iters 0=auto]
//
// time = the slowest rank's mean per call, best of `rounds` alternating batches;
// algbw = size / time; busbw = algbw * (n-1)/n; #wrong = elements differing from what the
// sender wrote after the timed calls; ratio = MPI time / gj time (> 1: gj is faster). gj runs
// with its agreement check at the library default (GJ_COLL_CHECK).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"

namespace gb = gj::bench;

namespace {

// Elements rank `from` sends rank `to` out of `per_rank` per sender.
std::size_t share(bool even, int to, int n, std::size_t per_rank) {
  if (even) return per_rank / static_cast<std::size_t>(n);
  const std::size_t weights = static_cast<std::size_t>(n) * (n + 1) / 2;
  return per_rank * static_cast<std::size_t>(to + 1) / weights;
}

}  // namespace

int main(int argc, char** argv) {
  const gb::MpiSession mpi(&argc, &argv);
  std::vector<gb::ElemType> types;
  gb::Sweep sweep;
  const bool ok = gb::read_options("gj_alltoall_bench", mpi, argc, argv, [&](const gb::Args& args) {
    types = gb::parse_types("types", args.str("types", "f32"));
    sweep = gb::read_sweep(args, 1024, 64LL << 20);
  });
  if (!ok) return gb::kUsage;

  const gb::GjComm comm;
  const int n = mpi.nranks;
  if (mpi.rank == 0) {
    std::printf("# gj_alltoall_bench: ranks=%d out-of-place %s\n", n, gb::machine_line().c_str());
    std::printf("# time: slowest rank's mean per call, best of %d alternating batches; ratio = MPI time / gj time\n",
                sweep.rounds);
  }
  gb::VsMpiTable table(mpi.rank);
  for (const bool even : {true, false}) {
    for (const gb::ElemType& t : types) {
      table.header(gb::strf("%-8s %12s %12s %6s", "splits", "size", "count", "type"),
                   gb::strf("%-8s %12s %12s %6s", "", "(B)", "(elements)", ""), "Alltoallv");
      for (std::size_t bytes = sweep.min_bytes; bytes <= sweep.max_bytes; bytes *= 2) {
        const std::size_t per_rank = bytes / t.size;
        std::vector<std::size_t> sc, rc;
        std::vector<int> isc, irc, isd, ird;
        for (int q = 0; q < n; ++q) {
          sc.push_back(share(even, q, n, per_rank));
          rc.push_back(share(even, mpi.rank, n, per_rank));
        }
        const std::size_t out = std::accumulate(sc.begin(), sc.end(), std::size_t{0});
        const std::size_t in = std::accumulate(rc.begin(), rc.end(), std::size_t{0});
        if (out == 0) continue;
        int s_at = 0, r_at = 0;
        for (int q = 0; q < n; ++q) {
          isc.push_back(static_cast<int>(sc[q] * t.size));
          isd.push_back(s_at);
          s_at += isc.back();
          irc.push_back(static_cast<int>(rc[q] * t.size));
          ird.push_back(r_at);
          r_at += irc.back();
        }
        std::vector<unsigned char> send(out * t.size), recv(std::max<std::size_t>(in, 1) * t.size);
        for (std::size_t i = 0; i < out; ++i) gb::store(t.dtype, send.data(), i, gb::input_value(mpi.rank, i));
        // What rank q sent here: its elements from its block for this rank's offset on.
        std::vector<float> want;
        for (int q = 0; q < n; ++q) {
          std::size_t first = 0;
          for (int p = 0; p < mpi.rank; ++p) first += share(even, p, n, per_rank);
          for (std::size_t i = 0; i < rc[q]; ++i) want.push_back(gb::input_value(q, first + i));
        }
        const gb::VsMpi r = gb::time_vs_mpi(
            sweep.rounds, gb::iters_for(bytes, sweep.fixed_iters),
            [&] {
              gb::check(gjAllToAllV(send.data(), sc.data(), recv.data(), rc.data(), t.dtype, comm.get(), nullptr),
                        comm.get(), "gjAllToAllV");
            },
            [&] {
              MPI_Alltoallv(send.data(), isc.data(), isd.data(), MPI_BYTE, recv.data(), irc.data(), ird.data(),
                            MPI_BYTE, MPI_COMM_WORLD);
            },
            [&] { std::memset(recv.data(), 0, recv.size()); },
            [&] {
              long long w = 0;
              for (std::size_t i = 0; i < in; ++i) w += gb::load(t.dtype, recv.data(), i) != want[i];
              return gb::sum_over_ranks(w);
            });
        table.row(gb::strf("%-8s %12zu %12zu %6s", even ? "equal" : "uneven", out * t.size, out, t.name.c_str()),
                  static_cast<double>(out * t.size), static_cast<double>(n - 1) / n, r);
      }
    }
  }
  table.summary();
  return table.wrong() == 0 ? 0 : 1;
}
