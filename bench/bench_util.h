// Shared pieces of the host benchmarks: options, machine description, timing of alternating
// runs, and the bf16 MPI_Op a user would write for the MPI baseline.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gj/collectives.h"

namespace gj::bench {

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

// "date=... host=... nproc=... cpu=..." for the table header.
std::string machine_line();

// Seconds from a monotonic clock.
double now();

// Runs `body` `iters` times between barriers and returns the slowest rank's mean seconds per call.
template <class F>
double time_batch(MPI_Comm comm, int iters, F&& body) {
  MPI_Barrier(comm);
  const double t0 = now();
  for (int i = 0; i < iters; ++i) body();
  double mean = (now() - t0) / iters;
  MPI_Allreduce(MPI_IN_PLACE, &mean, 1, MPI_DOUBLE, MPI_MAX, comm);
  return mean;
}

// The MPI baseline for bf16 sums: a 2-byte contiguous type and a commutative user op that
// widens to f32, adds and rounds to nearest even, written the way a user would (plain loop).
struct Bf16Mpi {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op sum = MPI_OP_NULL;
  Bf16Mpi();
  ~Bf16Mpi();
  Bf16Mpi(const Bf16Mpi&) = delete;
  Bf16Mpi& operator=(const Bf16Mpi&) = delete;
};

std::uint16_t to_bf16(float f);
float from_bf16(std::uint16_t b);

// Aborts every rank with a message if a gj call failed.
void check(gjResult_t r, gjComm_t comm, const char* call);

}  // namespace gj::bench
