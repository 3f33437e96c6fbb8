// Background processes we started and must not leave behind (the master's sshd). run_job's
// supervise mode terminates them after the job has exited; so does exit() (an atexit handler);
// terminate_owned_processes() does it explicitly. Exec (run_job without supervision) leaves
// them to the exec'd job, as its children. Signal-time cleanup is termination.h's.
#pragma once

#include <chrono>
#include <vector>

namespace gj {

// Records a background child that must not outlive the job (and installs the atexit net).
void register_owned_process(int pid);

// Drops pid from the registry and the signal-time table once it has been reaped.
void forget_owned(int pid);

// SIGTERM to every owned process, SIGKILL after grace; each is reaped and forgotten.
void terminate_owned_processes(std::chrono::milliseconds grace = std::chrono::seconds(2));

std::vector<int> owned_process_ids();

}  // namespace gj
