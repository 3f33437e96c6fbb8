// Waiting for a child we started and reading its end the way the shell reports it: the exit
// code, or 128+N when signal N killed it. A reaped child leaves the process registry and the
// signal-time table.
#pragma once

#include <optional>

namespace gj {

// waitpid(pid, WNOHANG): nullopt while running, else the shell-style status.
std::optional<int> poll_exit(int pid);
// Blocking waitpid; shell-style status.
int wait_exit(int pid);
// Converts a waitpid status to the shell convention (code, or 128+N when killed by N).
int shell_status(int wait_status);

}  // namespace gj
