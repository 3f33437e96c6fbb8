// Waiting for a child we started and reading its end the way the shell reports it: the exit
// code, or 128+N when signal N killed it. A reaped child leaves the process registry and the
// signal-time table.
#pragma once

#include <signal.h>

#include <optional>

namespace gj {

// The signals a parent that runs the program for someone (the PID-1 supervisor, the rank guard)
// passes on to it: the ones launchers and Kubernetes send to end or notify a process.
inline constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

// waitpid(pid, WNOHANG): nullopt while running, else the shell-style status.
std::optional<int> poll_exit(int pid);
// waitpid(pid, WNOHANG): nullopt while running, else the raw wait status.
std::optional<int> poll_wait_status(int pid);
// Blocking waitpid; the raw wait status (WIFSIGNALED etc. apply).
int wait_status(int pid);
// Blocking waitpid; shell-style status.
int wait_exit(int pid);
// Converts a waitpid status to the shell convention (code, or 128+N when killed by N).
int shell_status(int wait_status);

}  // namespace gj
