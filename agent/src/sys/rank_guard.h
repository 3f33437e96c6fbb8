// The rank wrapper: every rank's program runs under `gj-mpirun --rank-exec`, which stays its
// parent whatever the MPI flavour. It relays the program's stderr (keeping the last lines), reads
// the pod's cgroup v2 memory.events oom_kill before and after, gives the program the rank socket
// (GJ_RANK_MONITOR_FD, docs/collectives.md "Failure") and reports to the master's job monitor
// (job_monitor.h) over TCP: start, the library's hello/leave/fail, the program's exit or signal
// with its time of departure and stderr tail; it forwards the monitor's `lost`/`end` to the
// program. Protocol: docs/agent.md "Rank failures".
//
// Under MPICH's hydra without a monitor, a program that fails without MPI_Abort ends only its
// host's ranks (the others wait in their next collective and mpiexec never returns; measured with
// MPICH 4.0.2): there the wrapper asks hydra to abort the job on PMI_FD, as MPI_Abort would.
#pragma once

#include <string>
#include <vector>

#include "spawn.h"

namespace gj {

struct RankGuard {
  std::vector<std::string> argv;  // the program (looked up in the environment's PATH)
  Environment environment;        // the program's; GJ_RANK_MONITOR_FD is added here
  int pmi_fd = -1;                // hydra's PMI connection, or -1
  std::string monitor;            // "<port>,<token>,<address>,..." from --monitor; empty: none
  int rank = -1;
  int size = 0;
  int local_rank = -1;
  std::string pod;                // this pod's name, for the summary
  std::string termination_log;    // where a failed rank's line goes (GJ_TERMINATION_LOG)
  std::string state_dir;          // where it notes its pid for the worker's stop (local_ranks.h)
  // NCCL_DEBUG_FILE when gj set it (rank_env.h); empty: none. Its summary (nccl_log.h) goes to
  // the monitor as `nccl reason=<summary>` once NCCL wrote its transport, and again when it changes.
  std::string nccl_debug_file;
  // On GPU jobs: the command that prints the program's GPU use (`gj-mpirun --gpu-use`, the pid
  // appended; NVML in a child, gpu_probe.h), run every 5 s; its figures ride on the next pings
  // (`gmem=B gutil=R`). Empty: none.
  std::vector<std::string> gpu_use_command;
};

// Runs the program as a child with the signal state this process was given, passes
// SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 on to it, and ends as it ended: the same exit
// code, or the same signal. A program that failed while the monitor listens is reported first,
// and this process stays up to kFailureLinger (or until a termination signal) so that the
// launcher does not end the other ranks before the monitor told them (their library raises
// instead of being killed). The child gets SIGKILL if this process is killed; it gets SIGTERM
// (then SIGKILL) when the monitor's connection closes while it runs (the master is gone). Throws
// LaunchError 126/127 when argv cannot run.
int run_rank_guarded(const RankGuard& guard);

}  // namespace gj
