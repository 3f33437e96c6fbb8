// Allgather and reduce-scatter benchmark in the nccl-tests format: gjAllGather against
// MPI_Allgatherv and gjReduceScatter against MPI_Reduce_scatter on the same host buffers,
// runs alternating, sizes min..max bytes (x2 steps; size = the whole gathered buffer / the
// whole reduce-scatter input, as nccl-tests counts it).
//
//   mpiexec --allow-run-as-root -np 2 build/bench/gj_collectives_bench [--ops allgather,reduce_scatter]
//       [--types f32,bf16] [--minbytes 1K] [--maxbytes 64M] [--rounds 5] [--iters 0=auto]
//
// time = the slowest rank's mean per call, best of `rounds` alternating batches;
// algbw = size / time; busbw = algbw * (n-1)/n (both operations); #wrong = elements differing
// from the exact result after the timed calls; ratio = MPI time / gj time (> 1: gj is faster).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"

namespace {

using gj::bench::from_bf16;
using gj::bench::to_bf16;

struct TypeInfo {
  std::string name;
  gjDataType_t dtype;
  std::size_t size;
};

TypeInfo parse_type(const std::string& s) {
  if (s == "f32") return {s, gjFloat32, 4};
  if (s == "bf16") return {s, gjBfloat16, 2};
  throw std::invalid_argument("--types: '" + s + "' is not one of f32, bf16");
}

float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * static_cast<int>(i % 13)); }

void put(const TypeInfo& t, void* buf, std::size_t i, float v) {
  if (t.dtype == gjFloat32) static_cast<float*>(buf)[i] = v;
  else static_cast<std::uint16_t*>(buf)[i] = to_bf16(v);
}
float get(const TypeInfo& t, const void* buf, std::size_t i) {
  return t.dtype == gjFloat32 ? static_cast<const float*>(buf)[i] : from_bf16(static_cast<const std::uint16_t*>(buf)[i]);
}

struct Result {
  double time = std::numeric_limits<double>::infinity();
  long long wrong = 0;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);

  std::vector<TypeInfo> types;
  std::vector<std::string> ops;
  std::size_t min_bytes = 0, max_bytes = 0;
  int rounds = 0, fixed_iters = 0;
  try {
    gj::bench::Args args(argc, argv);
    std::stringstream list(args.str("types", "f32,bf16"));
    for (std::string s; std::getline(list, s, ',');) types.push_back(parse_type(s));
    std::stringstream op_list(args.str("ops", "allgather,reduce_scatter"));
    for (std::string s; std::getline(op_list, s, ',');) {
      if (s != "allgather" && s != "reduce_scatter") {
        throw std::invalid_argument("--ops: '" + s + "' is not one of allgather, reduce_scatter");
      }
      ops.push_back(s);
    }
    min_bytes = static_cast<std::size_t>(args.num("minbytes", 1024));
    max_bytes = static_cast<std::size_t>(args.num("maxbytes", 64LL << 20));
    rounds = static_cast<int>(args.num("rounds", 5));
    fixed_iters = static_cast<int>(args.num("iters", 0));
    args.reject_unknown();
    if (min_bytes == 0 || max_bytes < min_bytes || rounds < 1) {
      throw std::invalid_argument("need 0 < --minbytes <= --maxbytes and --rounds >= 1");
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "gj_collectives_bench: %s\n", e.what());
    MPI_Finalize();
    return 64;
  }

  MPI_Comm world = MPI_COMM_WORLD;
  gjComm_t comm = nullptr;
  gj::bench::check(gjCommInitMpi(&comm, &world), nullptr, "gjCommInitMpi");
  auto bf16_owner = std::make_unique<gj::bench::Bf16Mpi>();
  const gj::bench::Bf16Mpi& bf16 = *bf16_owner;
  if (rank == 0) {
    std::printf("# gj_collectives_bench: ranks=%d out-of-place %s\n", nranks, gj::bench::machine_line().c_str());
    std::printf("# time: slowest rank's mean per call, best of %d alternating batches; ratio = MPI time / gj time\n",
                rounds);
  }

  double worst_ratio = std::numeric_limits<double>::infinity();
  long long total_wrong = 0;
  const std::size_t n = static_cast<std::size_t>(nranks);
  for (const std::string& op : ops) {
    const bool gather = op == "allgather";
    for (const TypeInfo& t : types) {
      const MPI_Datatype mpi_type = t.dtype == gjFloat32 ? MPI_FLOAT : bf16.type;
      const MPI_Op mpi_op = t.dtype == gjFloat32 ? MPI_SUM : bf16.sum;
      const std::size_t max_total = max_bytes / t.size / n * n;
      std::vector<unsigned char> send(std::max<std::size_t>(max_total, n) * t.size);
      std::vector<unsigned char> recv(send.size());
      std::memset(recv.data(), 0, recv.size());
      if (rank == 0) {
        std::printf("#\n# %-14s %12s %12s %6s  %10s %8s %8s %7s  %10s %8s %8s %7s  %6s\n", "op", "size", "count", "type",
                    "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "ratio");
        std::printf("# %-14s %12s %12s %6s  %10s %8s %8s %7s  %10s %8s %8s %7s  %6s\n", "", "(B)", "(elements)", "",
                    "gj (us)", "(GB/s)", "(GB/s)", "", gather ? "Allgatherv" : "Red_scat", "(GB/s)", "(GB/s)", "",
                    "");
      }
      for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
        const std::size_t per = bytes / t.size / n;  // elements per rank
        if (per == 0) continue;
        const std::size_t total = per * n;
        const std::vector<std::size_t> counts(n, per);
        const std::vector<int> icounts(n, static_cast<int>(per));
        std::vector<int> displs(n);
        for (std::size_t q = 0; q < n; ++q) displs[q] = static_cast<int>(q * per);
        // Inputs: allgather sends `per` elements, reduce-scatter sends `total`.
        for (std::size_t i = 0; i < (gather ? per : total); ++i) put(t, send.data(), i, value(rank, i));
        const int iters =
            fixed_iters > 0 ? fixed_iters : static_cast<int>(std::clamp<std::size_t>((2u << 20) / bytes, 1, 200));
        auto ours = [&] {
          if (gather) {
            gj::bench::check(gjAllGather(send.data(), recv.data(), per, t.dtype, comm, nullptr), comm, "gjAllGather");
          } else {
            gj::bench::check(gjReduceScatter(send.data(), recv.data(), counts.data(), t.dtype, gjSum, 1.0, 1.0, comm,
                                             nullptr),
                             comm, "gjReduceScatter");
          }
        };
        auto mpi = [&] {
          if (gather) {
            MPI_Allgatherv(send.data(), static_cast<int>(per), mpi_type, recv.data(), icounts.data(), displs.data(),
                           mpi_type, MPI_COMM_WORLD);
          } else {
            MPI_Reduce_scatter(send.data(), recv.data(), icounts.data(), mpi_type, mpi_op, MPI_COMM_WORLD);
          }
        };
        auto wrong = [&] {
          long long w = 0;
          const int tri = nranks * (nranks + 1) / 2;
          if (gather) {
            for (std::size_t i = 0; i < total; ++i) w += get(t, recv.data(), i) != value(static_cast<int>(i / per), i % per);
          } else {
            for (std::size_t i = 0; i < per; ++i) {
              w += get(t, recv.data(), i) != static_cast<float>(tri * static_cast<int>((rank * per + i) % 13));
            }
          }
          MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
          return w;
        };
        ours();
        mpi();
        Result r_ours, r_mpi;
        for (int round = 0; round < rounds; ++round) {
          for (int k = 0; k < 2; ++k) {
            const bool ours_now = (round + k) % 2 == 0;
            std::memset(recv.data(), 0, (gather ? total : per) * t.size);
            Result& r = ours_now ? r_ours : r_mpi;
            const double s = ours_now ? gj::bench::time_batch(MPI_COMM_WORLD, iters, ours)
                                      : gj::bench::time_batch(MPI_COMM_WORLD, iters, mpi);
            r.time = std::min(r.time, s);
            r.wrong = std::max(r.wrong, wrong());
          }
        }
        const double bus = static_cast<double>(nranks - 1) / nranks;
        const double size_b = static_cast<double>(total * t.size);
        const double alg_ours = size_b / r_ours.time / 1e9;
        const double alg_mpi = size_b / r_mpi.time / 1e9;
        const double ratio = r_mpi.time / r_ours.time;
        worst_ratio = std::min(worst_ratio, ratio);
        total_wrong += r_ours.wrong + r_mpi.wrong;
        if (rank == 0) {
          std::printf("  %-14s %12zu %12zu %6s  %10.2f %8.3f %8.3f %7lld  %10.2f %8.3f %8.3f %7lld  %6.2f\n", op.c_str(),
                      total * t.size, total, t.name.c_str(), r_ours.time * 1e6, alg_ours, alg_ours * bus, r_ours.wrong,
                      r_mpi.time * 1e6, alg_mpi, alg_mpi * bus, r_mpi.wrong, ratio);
          std::fflush(stdout);
        }
      }
    }
  }
  if (rank == 0) std::printf("# lowest ratio %.2f, wrong elements %lld\n", worst_ratio, total_wrong);
  gjCommDestroy(comm);
  bf16_owner.reset();
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
