// The master's job monitor: a TCP server, in a thread of the supervising gj-mpirun, that every
// rank wrapper (rank_guard.h) connects to. It feeds what the wrappers report to JobWatch
// (job_watch.h, the rules), sends the other ranks `lost` and `end`, and raises end_requested()
// on the first failure so that the supervisor (supervise.h) ends the job. Protocol:
// docs/agent.md "Rank failures".
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "job_watch.h"

namespace gj {

class JobMonitor {
 public:
  // Listens on a port the kernel picks, on every address of this pod; starts the thread.
  // master_pod: this pod's name as the rank wrappers give it (JobWatch). Throws LaunchError
  // (kInternal) naming the call that failed.
  explicit JobMonitor(std::string master_pod);
  ~JobMonitor();
  JobMonitor(const JobMonitor&) = delete;
  JobMonitor& operator=(const JobMonitor&) = delete;

  // For --rank-exec's --monitor: "<port>,<token>,<address>,...", this pod's addresses other
  // than loopback first, loopback last.
  std::string endpoint() const;
  // Set on the first failure; the supervisor ends the job when it is.
  const std::atomic<bool>& end_requested() const;
  // After mpiexec has exited: waits up to `drain` for the wrappers still connected to report
  // (or drop), stops the thread and closes every connection. Returns what was seen.
  JobWatch finish(std::chrono::milliseconds drain);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gj
