// The master's job monitor: a TCP server, in a thread of the supervising gj-mpirun, that every
// rank wrapper (rank_guard.h) connects to. It feeds what the wrappers report to JobWatch
// (job_watch.h, the rules), sends the other ranks `lost` and `end`, and raises end_requested()
// on the first failure so that the supervisor (supervise.h) ends the job. Protocol:
// docs/agent.md "Rank failures".
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "job_view.h"
#include "job_watch.h"

namespace gj {

struct MonitorOptions {
  std::string master_pod;  // this pod's name as the rank wrappers give it (JobWatch)
  int ssh_port = 22;       // GJ_SSH_PORT: where the pods' sshd answers the liveness probes
  // A wrapper pings every second. One silent for this long is lost, unless its pod's sshd
  // answers within `probe` (the pod is up and reachable: a slow, not a lost, connection). The
  // probe's time adds to a failed job's end (pods_still_up), so it is short.
  std::chrono::milliseconds silence{std::chrono::seconds(10)};
  std::chrono::milliseconds probe{std::chrono::seconds(1)};
  // Inside the running job (job_view.h): hang lines, the hang timeout, status lines.
  ViewOptions view;
  // Where the status lines go (the agent's log at info); hang lines are warnings (warnings.h).
  std::function<void(const std::string&)> info;
  // The Prometheus endpoint's port (metrics_server.h); 0: none. One that cannot listen is a
  // warning, not a failed job.
  int metrics_port = 0;
};

class JobMonitor {
 public:
  // Listens on a port the kernel picks, on every address of this pod; starts the thread.
  // Throws LaunchError (kInternal) naming the call that failed.
  explicit JobMonitor(MonitorOptions options);
  ~JobMonitor();
  JobMonitor(const JobMonitor&) = delete;
  JobMonitor& operator=(const JobMonitor&) = delete;

  // For --rank-exec's --monitor: "<port>,<token>,<address>,...", this pod's addresses other
  // than loopback first, loopback last.
  std::string endpoint() const;
  // Asks every rank to stop: `stop reason=...` to every wrapper (and to those that connect
  // later), which passes it to its program's library (gj::peer::stop_requested_locally()).
  // Thread-safe. Returns whether some running rank's program polls for a stop request (its
  // library said `stoppoll`): then it is worth the stop grace. docs/agent.md "Stop requests".
  bool request_stop(const std::string& reason);
  // Set on the first failure; the supervisor ends the job when it is.
  const std::atomic<bool>& end_requested() const;
  // After mpiexec has exited: waits up to `drain` for the wrappers still connected to report
  // (or drop), stops the thread and closes every connection. Returns what was seen.
  JobWatch finish(std::chrono::milliseconds drain);
  // After finish(), when more than one pod is a candidate for the lost one (watch.dropped_pods():
  // hydra's mpiexec kills the surviving pods' ranks within ~0.15 s of losing one pod, and under
  // load those drops reach the master in the same wake as the lost pod's): the candidates whose
  // sshd answers (at the address their wrappers connected from) within options.probe. Those
  // pods are up; JobWatch::report takes them as such. Empty when there is nothing to tell apart.
  std::set<std::string> pods_still_up(const JobWatch& watch) const;
  // After finish(): one line per rank (JobView::end_lines).
  std::vector<std::string> end_lines() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gj
