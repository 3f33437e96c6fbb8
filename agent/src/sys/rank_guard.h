// A rank under MPICH's hydra whose program may die. Hydra ends the whole job when a rank calls
// MPI_Abort, but when a rank's program exits non-zero (or is killed) without it, hydra ends
// only that host's ranks: the ranks on the other hosts wait in their next collective and
// mpiexec never returns (measured with MPICH 4.0.2, ch4:ucx; docs/multihost.md). Open MPI ends
// the job itself. So under hydra the rank's gj-mpirun stays the program's parent and, when the
// program fails, asks hydra to abort the job with the program's status, on the PMI connection
// hydra gave the rank (PMI_FD), as MPI_Abort would.
#pragma once

#include <string>
#include <vector>

#include "spawn.h"

namespace gj {

// Runs argv (through PATH) as a child with the signal state this process was given, passes
// SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 on to it, and ends as it ended: the same exit
// code, or the same signal. Before that, when the child failed (non-zero or a signal), writes
// PMI-1's "cmd=abort exitcode=<shell status>" to pmi_fd (best effort). The child gets SIGKILL if
// this process is killed. Throws LaunchError 126/127 when argv cannot run.
// environment: the program's (nullptr: this process's).
int run_rank_guarded(const std::vector<std::string>& argv, int pmi_fd, const Environment* environment = nullptr);

}  // namespace gj
