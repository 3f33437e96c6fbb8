// Expectations of the multi-process GPU tests: a failed one is printed as "rank R: FAIL what"
// (the first 20 per rank: one wrong kernel fails a whole sweep) and counted; the test's exit
// status is the count summed over the ranks.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

namespace gj::test {

inline int g_rank = 0;  // this rank, for the messages
inline int g_failures = 0;

inline void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++g_failures;
  if (g_failures <= 20) std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
}

inline int failures_on_all_ranks() {
  int all = 0;
  MPI_Allreduce(&g_failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

}  // namespace gj::test
