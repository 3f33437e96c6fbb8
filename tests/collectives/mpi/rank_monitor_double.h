// A test double of gj-mpirun's rank wrapper (docs/collectives.md "Failure", the rank socket):
// every process mpiexec starts forks; the child is the rank (the library under test), the
// parent plays its wrapper. With a monitor the parent hands the child one end of a socketpair
// as GJ_RANK_MONITOR_FD and speaks the wrapper's side of the line protocol; without one it
// only reaps the child (the same-node fallback: a dead rank's pid is gone).
//
// The wrappers share a directory (one per job) instead of the agent's job monitor:
//   lost.R       written by R's wrapper when R left: the reason of its `lost` line
//                ("left the job: called shutdown" on `leave`, "exited with code 3",
//                "killed by SIGKILL"); R's host is given as "pod-R"
//   gone_at.R    when R's wrapper saw its child exit (CLOCK_MONOTONIC ms)
//   sent_at.R.Q  when R's wrapper sent `lost rank=Q` to its library (CLOCK_MONOTONIC ms)
//   recv.R       every line R's library sent
//   exit.R       R's child has exited (its wait status)
//   verdict.R    "ok" when R's child passed (exited with the expected status), else why not
// `end status=ok` goes to a library once every rank left; `end status=failed reason=...` once
// any rank left otherwise. A wrapper exits once every rank's child has exited, so that
// mpiexec ends nothing early; it exits 0 when its child's status is the expected one. The
// verdicts, not mpiexec's status, decide (peer_lost_run.sh): Open MPI reports ranks that
// did not finalize MPI, which is what a failing job's survivors must do.
#pragma once

#include <string>

namespace gj::test {

struct DoubleOptions {
  bool monitor = true;        // hand the child GJ_RANK_MONITOR_FD
  int expected_status = 0;    // the child's expected wait status (as from waitpid)
  long deadline_ms = 60000;   // the whole job; past it the child is killed and the test fails
};

// Forks. In the child (the rank) returns the job's shared directory; in the parent runs the
// wrapper until the job ends and exits the process with the verdict.
std::string run_under_double(const std::string& base_dir, const DoubleOptions& options);

// The rank's side of the checks.
long monotonic_ms();
std::string read_file(const std::string& path);  // empty if absent
int env_rank();
int env_size();

}  // namespace gj::test
