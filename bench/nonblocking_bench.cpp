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

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gj/collectives.h"
#include "gpu/resnet50_shapes.h"

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
  float get(std::size_t k, std::size_t i) const {
    if (dtype == gjFloat32) {
      float v;
      std::memcpy(&v, &data[k][i * 4], 4);
      return v;
    }
    std::uint16_t b;
    std::memcpy(&b, &data[k][i * 2], 2);
    return gj::bench::from_bf16(b);
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
    long long w = 0;
    for (std::size_t k = 0; k < data.size(); ++k) {
      for (std::size_t i = 0; i < counts[k]; ++i) w += get(k, i) != static_cast<float>(tri * static_cast<int>(i % 13));
    }
    MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return w;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // gj's progress thread needs it
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  std::string type;
  int rounds = 0, iters = 0, scale = 1;
  try {
    gj::bench::Args args(argc, argv);
    type = args.str("type", "f32");
    rounds = static_cast<int>(args.num("rounds", 3));
    iters = static_cast<int>(args.num("iters", 5));
    scale = static_cast<int>(args.num("scale", 1));
    args.reject_unknown();
    if (type != "f32" && type != "bf16") throw std::invalid_argument("--type " + type + ": use f32 or bf16");
    if (rounds < 1 || iters < 1 || scale < 1) throw std::invalid_argument("--rounds, --iters, --scale must be >= 1");
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "gj_nonblocking_bench: %s\n", e.what());
    MPI_Finalize();
    return 64;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::fprintf(stderr, "gj_nonblocking_bench: MPI lacks MPI_THREAD_MULTIPLE\n");
    MPI_Finalize();
    return 69;
  }
  const gjDataType_t dtype = type == "f32" ? gjFloat32 : gjBfloat16;
  std::vector<std::size_t> sizes = gj::bench::resnet50_gradient_sizes();
  for (std::size_t& s : sizes) s = (s + static_cast<std::size_t>(scale) - 1) / static_cast<std::size_t>(scale);
  Tensors t(dtype, sizes);
  const int nt = static_cast<int>(sizes.size());
  std::size_t bytes = 0;
  for (std::size_t n : sizes) bytes += n * t.elem;

  MPI_Comm world = MPI_COMM_WORLD;
  gjComm_t comm = nullptr;
  gj::bench::check(gjCommInitMpi(&comm, &world), nullptr, "gjCommInitMpi");
  std::size_t threshold = 0;
  gjCommGetFusionThreshold(comm, &threshold);
  auto bf16_owner = std::make_unique<gj::bench::Bf16Mpi>();
  const MPI_Datatype mpi_type = dtype == gjFloat32 ? MPI_FLOAT : bf16_owner->type;
  const MPI_Op mpi_op = dtype == gjFloat32 ? MPI_SUM : bf16_owner->sum;

  std::vector<gjRequest_t> reqs(sizes.size());
  std::vector<MPI_Request> mreqs(sizes.size());
  auto nonblocking = [&](std::size_t fusion) {
    return [&, fusion] {
      gjCommSetFusionThreshold(comm, fusion);
      for (int k = 0; k < nt; ++k) {
        gj::bench::check(gjIallReduce(t.ptrs[k], t.ptrs[k], t.counts[k], dtype, gjSum, 1.0, 1.0, comm, nullptr,
                                      &reqs[k]),
                         comm, "gjIallReduce");
      }
      for (int k = 0; k < nt; ++k) gj::bench::check(gjWait(reqs[k]), nullptr, "gjWait");
    };
  };
  struct Row {
    const char* name;
    std::function<void()> step;
    double time = std::numeric_limits<double>::infinity();
    long long wrong = 0;
  };
  std::vector<Row> rows;
  rows.push_back({"gjGroupedAllReduce (one call)", [&] {
                    gjCommSetFusionThreshold(comm, threshold);
                    gj::bench::check(gjGroupedAllReduce(t.ptrs.data(), t.ptrs.data(), t.counts.data(), nt, dtype,
                                                        gjSum, comm, nullptr),
                                     comm, "gjGroupedAllReduce");
                  }});
  rows.push_back({"gjIallReduce x161, fused", nonblocking(threshold)});
  rows.push_back({"gjIallReduce x161, unfused", nonblocking(0)});
  rows.push_back({"gjAllReduce x161 (blocking)", [&] {
                    for (int k = 0; k < nt; ++k) {
                      gj::bench::check(gjAllReduce(t.ptrs[k], t.ptrs[k], t.counts[k], dtype, gjSum, comm, nullptr),
                                       comm, "gjAllReduce");
                    }
                  }});
  rows.push_back({"MPI_Iallreduce x161 + Waitall", [&] {
                    for (int k = 0; k < nt; ++k) {
                      MPI_Iallreduce(MPI_IN_PLACE, t.ptrs[k], static_cast<int>(t.counts[k]), mpi_type, mpi_op,
                                     MPI_COMM_WORLD, &mreqs[k]);
                    }
                    MPI_Waitall(nt, mreqs.data(), MPI_STATUSES_IGNORE);
                  }});
  for (Row& r : rows) {  // correctness from fresh inputs, and warm-up
    t.fill(rank);
    r.step();
    r.wrong = t.wrong(nranks);
  }
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      Row& r = rows[(i + static_cast<std::size_t>(round)) % rows.size()];  // rotate which goes first
      r.time = std::min(r.time, gj::bench::time_batch(MPI_COMM_WORLD, iters, r.step));
    }
  }
  long long total_wrong = 0;
  if (rank == 0) {
    std::printf("# gj_nonblocking_bench: ranks=%d type=%s tensors=%d bytes=%zu op=sum in-place %s\n", nranks,
                type.c_str(), nt, bytes, gj::bench::machine_line().c_str());
    std::printf("# time: slowest rank's mean per step, best of %d batches of %d; fusion threshold %zu B\n", rounds,
                iters, threshold);
    std::printf("# %-32s %10s %8s %10s %16s %7s\n", "", "time (ms)", "GB/s", "vs grouped", "vs MPI_Iallreduce",
                "#wrong");
  }
  const double grouped = rows[0].time, mpi = rows.back().time;
  for (const Row& r : rows) {
    total_wrong += r.wrong;
    if (rank == 0) {
      std::printf("  %-32s %10.2f %8.3f %10.2f %16.2f %7lld\n", r.name, r.time * 1e3,
                  static_cast<double>(bytes) / r.time / 1e9, r.time / grouped, mpi / r.time, r.wrong);
    }
  }
  if (rank == 0) {
    std::printf("# fused requests: %.2fx the grouped call's time (goal <= 1.10), %.2fx faster than MPI_Iallreduce "
                "(goal >= 2)\n",
                rows[1].time / grouped, mpi / rows[1].time);
  }
  gjCommDestroy(comm);
  bf16_owner.reset();
  MPI_Finalize();
  return total_wrong == 0 ? 0 : 1;
}
