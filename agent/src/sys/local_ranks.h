// The rank wrappers of this pod, for the worker's stop request (docs/agent.md "Stop
// requests"): each wrapper notes its pid in <state_dir>/ranks/ while it runs; the worker pod's
// gj-mpirun, told to end (SIGTERM: the pod is being deleted), sends each kStopSignal, and the
// wrapper asks the master to stop the whole job (`stopreq`) and tells its own program (`stop`).
#pragma once

#include <csignal>
#include <string>

namespace gj {

// Not among the signals a wrapper passes on to its program (child_exit.h kForwardedSignals).
inline int stop_signal() { return SIGRTMIN + 1; }

// The wrapper's note: <state_dir>/ranks/<pid>; removed by forget_local_rank (best effort: a
// stale note names a pid that kill() no longer finds, or another process that ignores it).
void note_local_rank(const std::string& state_dir);
void forget_local_rank(const std::string& state_dir);

// Sends stop_signal() to every noted wrapper; returns how many were signalled.
int signal_local_ranks(const std::string& state_dir);
// How many noted wrappers are still alive.
int local_ranks_alive(const std::string& state_dir);

}  // namespace gj
