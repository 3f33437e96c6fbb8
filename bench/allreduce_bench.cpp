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

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"
#include "shm/shm_allreduce.h"

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

// Input of rank r at element i: (r + 1) * (i % 13), exact in f32 and bf16 for <= 8 ranks;
// the sum over n ranks is n(n+1)/2 * (i % 13).
void fill(const TypeInfo& t, void* buf, std::size_t count, int rank) {
  for (std::size_t i = 0; i < count; ++i) {
    const auto v = static_cast<float>((rank + 1) * static_cast<int>(i % 13));
    if (t.dtype == gjFloat32) static_cast<float*>(buf)[i] = v;
    else static_cast<std::uint16_t*>(buf)[i] = to_bf16(v);
  }
}

long long count_wrong(const TypeInfo& t, const void* buf, std::size_t count, int nranks) {
  const int tri = nranks * (nranks + 1) / 2;
  long long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const float want = static_cast<float>(tri * static_cast<int>(i % 13));
    const float got = t.dtype == gjFloat32 ? static_cast<const float*>(buf)[i]
                                           : from_bf16(static_cast<const std::uint16_t*>(buf)[i]);
    wrong += got != want;
  }
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return wrong;
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
  std::size_t min_bytes = 0, max_bytes = 0;
  int rounds = 0, fixed_iters = 0;
  std::string impl;
  try {
    gj::bench::Args args(argc, argv);
    std::stringstream list(args.str("types", "f32,bf16"));
    for (std::string s; std::getline(list, s, ',');) types.push_back(parse_type(s));
    min_bytes = static_cast<std::size_t>(args.num("minbytes", 4));
    max_bytes = static_cast<std::size_t>(args.num("maxbytes", 256LL << 20));
    rounds = static_cast<int>(args.num("rounds", 5));
    fixed_iters = static_cast<int>(args.num("iters", 0));
    impl = args.str("impl", "gj");
    args.reject_unknown();
    if (impl != "gj" && impl != "shm") throw std::invalid_argument("--impl " + impl + ": use gj or shm");
    if (min_bytes == 0 || max_bytes < min_bytes || rounds < 1) {
      throw std::invalid_argument("need 0 < --minbytes <= --maxbytes and --rounds >= 1");
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "gj_allreduce_bench: %s\n", e.what());
    MPI_Finalize();
    return 64;
  }

  MPI_Comm world = MPI_COMM_WORLD;
  gjComm_t comm = nullptr;
  std::unique_ptr<gj::shm::ShmAllreduce> engine;
  if (impl == "gj") {
    gj::bench::check(gjCommInitMpi(&comm, &world), nullptr, "gjCommInitMpi");
  } else {
    std::string why;
    engine = gj::shm::ShmAllreduce::create(MPI_COMM_WORLD, &why);
    if (!engine) {
      if (rank == 0) std::fprintf(stderr, "gj_allreduce_bench: ShmAllreduce::create: %s\n", why.c_str());
      MPI_Abort(MPI_COMM_WORLD, 69);
    }
  }
  auto bf16_owner = std::make_unique<gj::bench::Bf16Mpi>();  // freed before MPI_Finalize
  const gj::bench::Bf16Mpi& bf16 = *bf16_owner;

  if (rank == 0) {
    std::printf("# gj_allreduce_bench: ranks=%d impl=%s op=sum out-of-place %s\n", nranks, impl.c_str(),
                gj::bench::machine_line().c_str());
    std::printf("# time: slowest rank's mean per call, best of %d alternating batches; ratio = MPI time / %s time\n",
                rounds, impl.c_str());
  }

  double worst_ratio = std::numeric_limits<double>::infinity();
  long long total_wrong = 0;
  for (const TypeInfo& t : types) {
    const std::size_t max_count = max_bytes / t.size;
    std::vector<unsigned char> send(std::max<std::size_t>(max_count, 1) * t.size);
    std::vector<unsigned char> recv(send.size());
    fill(t, send.data(), max_count, rank);
    std::memset(recv.data(), 0, recv.size());  // touch every page before timing

    const MPI_Datatype mpi_type = t.dtype == gjFloat32 ? MPI_FLOAT : bf16.type;
    const MPI_Op mpi_op = t.dtype == gjFloat32 ? MPI_SUM : bf16.sum;
    if (rank == 0) {
      std::printf("#\n# %12s %12s %6s %6s  %10s %8s %8s %7s  %10s %8s %8s %7s  %6s\n", "size", "count", "type", "redop",
                  "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "ratio");
      std::printf("# %12s %12s %6s %6s  %10s %8s %8s %7s  %10s %8s %8s %7s  %6s\n", "(B)", "(elements)", "", "",
                  "gj (us)", "(GB/s)", "(GB/s)", "", "MPI (us)", "(GB/s)", "(GB/s)", "", "");
    }
    for (std::size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      const std::size_t count = bytes / t.size;
      if (count == 0) continue;
      // Short batches (<= ~2 MiB moved) and best-of-rounds: on a shared machine a batch
      // longer than a scheduler time slice measures our CPU share, not the allreduce.
      const int iters =
          fixed_iters > 0 ? fixed_iters : static_cast<int>(std::clamp<std::size_t>((2u << 20) / bytes, 1, 200));
      auto ours = [&] {
        if (engine) engine->allreduce(send.data(), recv.data(), count, t.dtype, gjSum);
        else gj::bench::check(gjAllReduce(send.data(), recv.data(), count, t.dtype, gjSum, comm, nullptr), comm,
                              "gjAllReduce");
      };
      auto mpi = [&] {
        MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), mpi_type, mpi_op, MPI_COMM_WORLD);
      };
      ours();  // warm-up: pages, connections, internal buffers
      mpi();
      Result r_ours, r_mpi;
      for (int round = 0; round < rounds; ++round) {
        for (int k = 0; k < 2; ++k) {
          const bool ours_now = (round + k) % 2 == 0;  // alternate which goes first
          std::memset(recv.data(), 0, count * t.size);
          Result& r = ours_now ? r_ours : r_mpi;
          const double s = ours_now ? gj::bench::time_batch(MPI_COMM_WORLD, iters, ours)
                                    : gj::bench::time_batch(MPI_COMM_WORLD, iters, mpi);
          r.time = std::min(r.time, s);
          r.wrong = std::max(r.wrong, count_wrong(t, recv.data(), count, nranks));
        }
      }
      const double bus = 2.0 * (nranks - 1) / nranks;
      const double alg_ours = static_cast<double>(bytes) / r_ours.time / 1e9;
      const double alg_mpi = static_cast<double>(bytes) / r_mpi.time / 1e9;
      const double ratio = r_mpi.time / r_ours.time;
      worst_ratio = std::min(worst_ratio, ratio);
      total_wrong += r_ours.wrong + r_mpi.wrong;
      if (rank == 0) {
        std::printf("  %12zu %12zu %6s %6s  %10.2f %8.3f %8.3f %7lld  %10.2f %8.3f %8.3f %7lld  %6.2f\n", bytes, count,
                    t.name.c_str(), "sum", r_ours.time * 1e6, alg_ours, alg_ours * bus, r_ours.wrong, r_mpi.time * 1e6,
                    alg_mpi, alg_mpi * bus, r_mpi.wrong, ratio);
        std::fflush(stdout);
      }
    }
  }
  if (rank == 0) std::printf("# lowest ratio %.2f, wrong elements %lld\n", worst_ratio, total_wrong);

  engine.reset();
  if (comm != nullptr) gjCommDestroy(comm);
  bf16_owner.reset();
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
