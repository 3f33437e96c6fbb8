// Running the job: exec in place, or (PID 1 duty) supervise it as tini does. Supervision forks
// (through spawn_process), forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT and SIGUSR1/SIGUSR2 to the job's
// process group, reaps every child that reaches us (we are a child subreaper, or PID 1) and,
// once the job has exited, ends what is left of its group and our owned processes.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "spawn.h"

namespace gj {

// supervise false: exec_job(argv) (never returns). true: returns the job's exit status as the
// shell does (code, or 128+N when killed by signal N; 128+N also when the job exits non-zero
// after we passed it termination signal N). Exec failures: 127 not found, 126 not executable.
// environment: the job's (nullptr: this process's).
//
// end (supervised only): another thread (the job monitor) sets *end->requested when a rank
// failed; the job then has `grace` to end by itself (the ranks' library raises on `lost`), then
// its process group gets SIGTERM and, `term_grace` later, SIGKILL. run_job sets terminated_by
// to the termination signal it passed on to the job before any end was requested (a pod being
// deleted): the ranks that then die were ended by it, not by a failed rank.
//
// stop (supervised only): called once at the first termination signal that comes before any end
// was requested (the pod being deleted): it asks every rank to stop (the job monitor's `stop`,
// docs/agent.md "Stop requests") and returns whether some rank's program polls for that. Then
// the signal reaches the job's process group only `stop_grace` later (or at once on a second
// termination signal), so that the program can save its state and leave by itself.
struct JobEnd {
  const std::atomic<bool>* requested = nullptr;
  std::function<bool()> stop;
  std::chrono::milliseconds stop_grace{0};
  // While a signal is held: true once what was asked to stop has gone, to pass it on at once.
  std::function<bool()> stop_done;
  std::chrono::milliseconds grace{3000};
  std::chrono::milliseconds term_grace{1500};
  // The owned background processes (the master's sshd) stay after the job: another attempt
  // (--max-restarts) needs them. exit() still ends them (process_registry.h).
  bool keep_owned = false;
  int terminated_by = 0;  // out
};
int run_job(const std::vector<std::string>& argv, bool supervise, const Environment* environment = nullptr,
            JobEnd* end = nullptr);

}  // namespace gj
