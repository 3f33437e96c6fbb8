// The rank wrapper's test double (rank_monitor_double.h) as a launcher, for programs that are
// not C++ (gj.torch scripts):
//   mpiexec -n N gj_rank_monitor_double DIR [RANK:STATUS...] -- PROGRAM ARGS...
// Each rank runs PROGRAM under the double, with GJ_RANK_MONITOR_FD and GJ_TEST_DOUBLE_DIR (the
// job's shared directory) set; RANK:STATUS is a rank's expected wait status (default 0), e.g.
// 1:768 for "rank 1 exits with code 3", 1:9 for "rank 1 is SIGKILLed". Judge the run with
// peer_lost_run.sh (the verdicts), not mpiexec's status.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rank_monitor_double.h"

int main(int argc, char** argv) {
  int at = 2;
  gj::test::DoubleOptions o;
  const int rank = gj::test::env_rank();
  for (; at < argc && std::strcmp(argv[at], "--") != 0; ++at) {
    const char* colon = std::strchr(argv[at], ':');
    if (colon == nullptr) {
      std::fprintf(stderr, "gj_rank_monitor_double: %s is not RANK:STATUS\n", argv[at]);
      return 2;
    }
    if (std::atoi(argv[at]) == rank) o.expected_status = std::atoi(colon + 1);
  }
  if (argc < 2 || at + 1 >= argc) {
    std::fprintf(stderr, "usage: gj_rank_monitor_double DIR [RANK:STATUS...] -- PROGRAM ARGS...\n");
    return 2;
  }
  const std::string dir = gj::test::run_under_double(argv[1], o);  // the child from here
  setenv("GJ_TEST_DOUBLE_DIR", dir.c_str(), 1);
  execvp(argv[at + 1], argv + at + 1);
  std::perror(argv[at + 1]);
  return 127;
}
