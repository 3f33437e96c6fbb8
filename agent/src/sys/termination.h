// Ending gj-mpirun on a termination signal in every phase before the job runs (flavour
// detection, sshd setup, the readiness gate, key copies). Kubernetes stops a pod with SIGTERM to
// PID 1, and PID 1 ignores every signal it has no handler for, so without this the master would
// sit out the gate's deadline. The handler stops every child we started (the background sshd
// with SIGTERM, short-lived helpers such as `mpiexec --version`, ssh-keygen and the gate's ssh
// checks with SIGKILL) and exits 128+N. Async-signal-safe: children live in a fixed table of
// atomics that spawn_process and the waits keep.
#pragma once

namespace gj {

// Installs the handler for SIGTERM, SIGINT, SIGHUP and SIGQUIT. run_job replaces it: supervision
// forwards the signals to the job, exec resets them.
void install_termination_handlers();

// The child table (spawn_process, the waits and the process registry keep it). owned: the
// background sshd, stopped gently. group: the child leads its own process group, which the
// signal ends whole (a helper's own children too).
void remember_child(int pid, bool owned, bool group = false);
void forget_child(int pid);

}  // namespace gj
