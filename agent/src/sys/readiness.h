// Readiness gate: the master waits until every worker host accepts connections on its ssh port
// (and optionally a real non-interactive ssh login succeeds) before mpiexec starts.
// Side effects (sockets, DNS, child ssh processes) live here; children start through spawn.h.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "defaults.h"

namespace gj {

enum class HostState {
  Pending,       // not probed yet
  Unresolvable,  // name does not resolve (yet)
  Refused,       // TCP connection refused (sshd not listening yet)
  TimedOut,      // TCP connect timed out
  ConnectFailed, // TCP connect failed otherwise (no route, socket error; detail says how)
  SshFailed,     // TCP ok, the ssh login check failed (detail says how)
  Ready,
};
const char* to_string(HostState s);

struct ReadinessOptions {
  std::chrono::milliseconds deadline{std::chrono::seconds(defaults::kReadyTimeoutS)};  // GJ_READY_TIMEOUT
  std::chrono::milliseconds progress_interval{std::chrono::seconds(5)};
  std::chrono::milliseconds max_backoff{std::chrono::seconds(1)};     // retry cap per host
  int port = defaults::kSshPort;                                     // GJ_SSH_PORT
  // When non-empty, after TCP succeeds run argv = ssh_login_prefix + {host, "true"} and
  // require exit 0 (e.g. {"ssh","-o","BatchMode=yes",...}). Empty = TCP check only.
  std::vector<std::string> ssh_login_prefix;

  // Defaults suit a Kubernetes pod; tests inject shorter ones:
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(2)};  // one TCP attempt (and its banner)
  // After TCP connects, exchange SSH identification strings (send ours, read the server's
  // "SSH-..." line, close politely): a host is Ready only when an SSH server answers, and sshd
  // logs the probe as an ordinary closed connection ("Connection closed by ... [preauth]", level
  // INFO) instead of the "kex_exchange_identification: Connection closed by remote host" error a
  // bare TCP connect leaves in every healthy worker's log. Off: TCP connect only.
  bool ssh_identification = false;
  // Retry cap while a host refuses connections: its pod is up and sshd is about to listen, and
  // a refusal costs one RST, so it is retried often (this bounds listen -> ready latency).
  std::chrono::milliseconds refused_backoff_cap{100};
  std::chrono::milliseconds login_timeout{std::chrono::seconds(30)};  // one ssh login check
  int max_parallel_logins = 16;                                       // ssh checks at a time
  std::string hosts_file = "/etc/hosts";
  std::string resolv_conf = "/etc/resolv.conf";
  int dns_port = 53;
  std::chrono::milliseconds dns_timeout{1000};  // per nameserver and name
};

struct HostStatus {
  std::string host;
  HostState state = HostState::Pending;
  std::string detail;  // last reason, e.g. "connection refused (10.0.0.3:22)"
  // What the gate saw, for logs and tests:
  int attempts = 0;                                 // probes started
  std::chrono::steady_clock::time_point ready_at{};  // when it became Ready (latency measurements)
};

struct ReadinessReport {
  bool all_ready = false;
  std::vector<HostStatus> hosts;  // same order as the input
  std::chrono::milliseconds elapsed{0};
};

// One progress line: "2/3 hosts ready; waiting for h: reason, ..." (at most `max_listed` hosts
// named, then "and N more"). Pure.
std::string readiness_summary(const std::vector<HostStatus>& hosts, std::size_t max_listed = 3);

// Probes all hosts concurrently (one event loop, no thread per host) until every host is
// Ready or the deadline passes. progress() is called every progress_interval with a one-line
// summary ("2/3 hosts ready; waiting for job-worker-1.job: connection refused").
ReadinessReport wait_until_ready(const std::vector<std::string>& hosts, const ReadinessOptions& opts,
                                 const std::function<void(const std::string&)>& progress);

}  // namespace gj
