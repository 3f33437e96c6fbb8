// Readiness gate: the master waits until every worker host accepts connections on its ssh port
// (and optionally a real non-interactive ssh login succeeds) before mpiexec starts.
// Side effects (sockets, DNS, child ssh processes) live here and in launch.cpp only.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace gj {

enum class HostState {
  Pending,       // not probed yet
  Unresolvable,  // name does not resolve (yet)
  Refused,       // TCP connection refused (sshd not listening yet)
  TimedOut,      // TCP connect timed out
  SshFailed,     // TCP ok, the ssh login check failed (detail says how)
  Ready,
};
const char* to_string(HostState s);

struct ReadinessOptions {
  std::chrono::milliseconds deadline{std::chrono::minutes(5)};        // GJ_READY_TIMEOUT
  std::chrono::milliseconds progress_interval{std::chrono::seconds(5)};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(1)};     // retry cap per host
  int port = 22;                                                     // GJ_SSH_PORT
  // When non-empty, after TCP succeeds run argv = ssh_login_prefix + {host, "true"} and
  // require exit 0 (e.g. {"ssh","-o","BatchMode=yes",...}). Empty = TCP check only.
  std::vector<std::string> ssh_login_prefix;
};

struct HostStatus {
  std::string host;
  HostState state = HostState::Pending;
  std::string detail;  // last reason, e.g. "connection refused (10.0.0.3:22)"
};

struct ReadinessReport {
  bool all_ready = false;
  std::vector<HostStatus> hosts;  // same order as the input
  std::chrono::milliseconds elapsed{0};
};

// Probes all hosts concurrently (one event loop, no thread per host) until every host is
// Ready or the deadline passes. progress() is called every progress_interval with a one-line
// summary ("2/3 hosts ready; waiting for job-worker-1.job: connection refused").
ReadinessReport wait_until_ready(const std::vector<std::string>& hosts, const ReadinessOptions& opts,
                                 const std::function<void(const std::string&)>& progress);

}  // namespace gj
