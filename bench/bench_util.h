// What the host benchmarks share: MPI for the run, options, the inputs every one checks its
// results with, the timing of alternating batches, the gj-vs-MPI table, and the bf16 MPI_Op a
// user would write for the MPI baseline. Each benchmark keeps only what it measures.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gj/collectives.h"

namespace gj::bench {

// Exit codes (sysexits.h): a bad command line; a capability the run needs is missing.
inline constexpr int kUsage = 64;
inline constexpr int kUnavailable = 69;

// MPI for the whole run: MPI_Init (MPI_Init_thread asking for MPI_THREAD_MULTIPLE when
// thread_multiple), MPI_Finalize when it goes out of scope. Declare it first in main: what is
// declared after it (communicators, MPI types) is gone before MPI_Finalize.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv, bool thread_multiple = false);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank = 0;
  int nranks = 1;
  bool thread_multiple = false;  // MPI provides MPI_THREAD_MULTIPLE
};

// "--name value" / "--flag" options; unknown names are an error naming the option.
class Args {
 public:
  Args(int argc, char** argv);
  std::string str(const std::string& name, const std::string& def) const;
  long long num(const std::string& name, long long def) const;  // accepts K/M/G suffixes
  bool flag(const std::string& name) const;
  // Call after reading every option: throws naming an option nobody read.
  void reject_unknown() const;

 private:
  std::vector<std::pair<std::string, std::string>> kv_;
  mutable std::vector<std::string> known_;
};

// Runs read(args) (which reads every option and throws std::exception on a bad value), then
// rejects unknown options. On failure rank 0 prints "<prog>: <why>" and false is returned: the
// caller returns kUsage.
template <class Read>
bool read_options(const char* prog, const MpiSession& mpi, int argc, char** argv, Read&& read) {
  try {
    Args args(argc, argv);
    read(args);
    args.reject_unknown();
    return true;
  } catch (const std::exception& e) {
    if (mpi.rank == 0) std::fprintf(stderr, "%s: %s\n", prog, e.what());
    return false;
  }
}

// The size sweep every per-size benchmark takes: --minbytes, --maxbytes (doubling from one to
// the other), --rounds (alternating batches, best kept) and --iters (0 = iters_for's choice).
struct Sweep {
  std::size_t min_bytes = 0, max_bytes = 0;
  int rounds = 0, fixed_iters = 0;
};
// Reads the sweep's options with these defaults; throws unless 0 < min <= max and rounds >= 1.
Sweep read_sweep(const Args& args, long long default_min, long long default_max);

// Throws naming the options unless each is >= 1.
void require_positive(std::initializer_list<std::pair<const char*, long long>> options);

// The element types measured: f32, and bf16 (the MPI baseline's user op, Bf16Mpi).
struct ElemType {
  std::string name;
  gjDataType_t dtype;
  std::size_t size;
};
// `value` of option `option` ("f32" or "bf16"; a comma-separated list for parse_types).
ElemType parse_type(const std::string& option, const std::string& value);
std::vector<ElemType> parse_types(const std::string& option, const std::string& list);
std::vector<std::string> split_list(const std::string& list);

// The inputs every benchmark checks its results with: rank r's element i is (r + 1) * (i % 13),
// exact in f32 and bf16 for <= 8 ranks, so the sum over n ranks, n(n+1)/2 * (i % 13), is exact.
float input_value(int rank, std::size_t i);
float sum_value(int nranks, std::size_t i);
// Element i of an f32 or bf16 buffer.
void store(gjDataType_t t, void* buf, std::size_t i, float v);
float load(gjDataType_t t, const void* buf, std::size_t i);
// The sum of every rank's `n` (a count of wrong elements).
long long sum_over_ranks(long long n);

// "date=... host=... nproc=... cpu=..." for the table header.
std::string machine_line();
// printf into a string (a table's leading columns).
std::string strf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Seconds from a monotonic clock.
double now();

// Runs `body` `iters` times between barriers and returns the slowest rank's mean seconds per call.
template <class F>
double time_batch(int iters, F&& body) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now();
  for (int i = 0; i < iters; ++i) body();
  double mean = (now() - t0) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &mean, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mean;
}

// One method's result: its best seconds per call (or step), and elements found wrong.
struct Measured {
  double time = std::numeric_limits<double>::infinity();
  long long wrong = 0;
};

// `rounds` rounds of one batch of every method, rotating which goes first (round r starts with
// method r % n): batch(m) runs and times one batch of method m, and each keeps its best time.
template <class Batch>
void best_of_rounds(int rounds, std::vector<Measured>& methods, Batch&& batch) {
  const int n = static_cast<int>(methods.size());
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < n; ++k) {
      const int m = (round + k) % n;
      methods[m].time = std::min(methods[m].time, batch(m));
    }
  }
}

// Calls per batch for a message of `bytes`: `fixed` when > 0, else about 2 MiB moved (1 to 200
// calls). Short batches and best-of-rounds: on a shared machine a batch longer than a scheduler
// time slice measures our CPU share, not the collective.
int iters_for(std::size_t bytes, int fixed);

// gj against MPI on the same buffers: one warm-up call each (pages, connections, internal
// buffers), then `rounds` rounds of one batch each, alternating which goes first; reset()
// before every batch, wrong() after it (the largest count is kept).
struct VsMpi {
  Measured gj, mpi;
  double ratio() const { return mpi.time / gj.time; }  // > 1: gj is faster
};
template <class Gj, class Mpi, class Reset, class Wrong>
VsMpi time_vs_mpi(int rounds, int iters, Gj&& gj, Mpi&& mpi, Reset&& reset, Wrong&& wrong) {
  gj();
  mpi();
  std::vector<Measured> m(2);
  best_of_rounds(rounds, m, [&](int k) {
    reset();
    const double s = k == 0 ? time_batch(iters, gj) : time_batch(iters, mpi);
    m[k].wrong = std::max(m[k].wrong, wrong());
    return s;
  });
  return VsMpi{m[0], m[1]};
}

// The nccl-tests layout of gj against MPI, printed on rank 0: the caller's leading columns, then
// for gj and for MPI time (us), algbw, busbw, #wrong, then ratio = MPI time / gj time. Keeps the
// lowest ratio and the wrong elements for the summary line.
class VsMpiTable {
 public:
  explicit VsMpiTable(int rank) : rank_(rank) {}
  // Two header lines; `names`/`units` are the leading columns, `mpi_name` heads MPI's time.
  void header(const std::string& names, const std::string& units, const char* mpi_name) const;
  // bus_factor: busbw / algbw for the operation.
  void row(const std::string& lead, double bytes, double bus_factor, const VsMpi& r);
  // "# lowest ratio R, wrong elements W"
  void summary() const;
  long long wrong() const { return wrong_; }

 private:
  int rank_;
  double worst_ratio_ = std::numeric_limits<double>::infinity();
  long long wrong_ = 0;
};

// The MPI baseline for bf16 sums: a 2-byte contiguous type and a commutative user op that
// widens to f32, adds and rounds to nearest even, written the way a user would (plain loop).
struct Bf16Mpi {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op sum = MPI_OP_NULL;
  Bf16Mpi();
  ~Bf16Mpi();
  Bf16Mpi(const Bf16Mpi&) = delete;
  Bf16Mpi& operator=(const Bf16Mpi&) = delete;
  // The MPI type and sum op of a measured element type (f32: MPI's own).
  MPI_Datatype type_of(gjDataType_t t) const { return t == gjFloat32 ? MPI_FLOAT : type; }
  MPI_Op sum_of(gjDataType_t t) const { return t == gjFloat32 ? MPI_SUM : sum; }
};

std::uint16_t to_bf16(float f);
float from_bf16(std::uint16_t b);

// Aborts every rank with a message if a gj call failed.
void check(gjResult_t r, gjComm_t comm, const char* call);

// A gj communicator over MPI_COMM_WORLD (gjCommInitMpi; every rank aborts if it fails),
// destroyed with the object.
class GjComm {
 public:
  GjComm();
  ~GjComm();
  GjComm(const GjComm&) = delete;
  GjComm& operator=(const GjComm&) = delete;
  gjComm_t get() const { return comm_; }

 private:
  gjComm_t comm_ = nullptr;
};

// ResNet-50's 161 gradient tensors (bench/gpu/resnet50_shapes.h), each size divided by `scale`
// (rounded up, for quick runs), as f32 or bf16, filled and checked with input_value/sum_value.
struct Gradients {
  gjDataType_t dtype;
  std::size_t elem;
  std::vector<std::vector<unsigned char>> data;
  std::vector<std::size_t> counts;
  std::vector<void*> ptrs;

  Gradients(gjDataType_t t, std::size_t scale);
  int size() const { return static_cast<int>(counts.size()); }
  std::size_t bytes() const;
  void fill(int rank);
  // Elements over all ranks that differ from the exact sum of one step.
  long long wrong(int nranks) const;
};

// One row of a per-step benchmark: a training step's reduction of every gradient.
struct Step {
  Step(const char* n, std::function<void()> r) : name(n), run(std::move(r)) {}
  const char* name;
  std::function<void()> run;
  Measured result;
};

// Each step once from fresh gradients (warm-up, and its #wrong), then `rounds` rounds of one
// batch of `iters` steps each, rotating which goes first, fresh gradients before every batch
// (in-place sums grow); each step keeps its best time per step.
void measure_steps(std::vector<Step>& steps, Gradients& g, const MpiSession& mpi, int rounds, int iters);

}  // namespace gj::bench
