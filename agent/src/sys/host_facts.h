// Facts about this pod that planning needs and cannot compute: where this executable is (every
// rank re-runs it in its rank-exec mode), the pod's PATH kept for its ranks, its host name, and
// a TCP port that is free here now.
#pragma once

#include <optional>
#include <string>

namespace gj {

// /proc/self/exe. Throws LaunchError (kInternal) when it cannot be read.
std::string self_executable();

// The pod's PATH as the container got it, kept in <state_dir>/pod_path by the worker before it
// becomes sshd, for the ranks its ssh sessions start (write: LaunchError kSetupFailed; read:
// nullopt when absent or empty).
void write_pod_path(const std::string& state_dir, const std::string& path);
std::optional<std::string> read_pod_path(const std::string& state_dir);

// gethostname(): a pod's name. Throws LaunchError (kInternal) when it fails.
std::string local_host_name();

// A port the kernel reports free on every local address (bind to port 0, read it back, close).
// Another process may take it before the job binds it; the window is the job's start-up.
// Throws LaunchError (kSetupFailed) naming the failed call.
int free_tcp_port();

}  // namespace gj
