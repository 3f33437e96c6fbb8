// sshd for MPI: the worker execs it, the master starts it in the background; both prepare the
// state dir, host key, authorized_keys copy and the generated sshd_config first. What to run is
// an SshdSetup (sshd_config.h, pure); this is the side-effect half.
#pragma once

#include <string>
#include <vector>

#include "agent_error.h"
#include "sshd_config.h"
#include "supervise.h"

namespace gj {

// Worker: creates the privilege separation dir, host keys (private to the pod, in state_dir)
// and a hardened sshd_config, then execs `sshd -D -e -f <config>`. Never returns.
[[noreturn]] void exec_worker_sshd(const SshdSetup& setup);

// Worker with a stop path (GJ_STOP_GRACE, docs/agent.md "Stop requests"): the same, but sshd runs
// as a supervised child (sys/supervise.h run_job with `end`), so that a termination signal can
// first ask this pod's ranks to stop. Returns sshd's status as run_job reports it.
int run_worker_sshd(const SshdSetup& setup, JobEnd* end);

// Master: same preparation, starts sshd in the background (not waited for here).
void start_background_sshd(const SshdSetup& setup);

// Copies the client private keys found in setup.ssh_dir to <state_dir>/ssh/ with mode 0600
// (mounted secrets are often group-readable and ssh refuses them). Returns the copied paths.
std::vector<std::string> prepare_client_keys(const SshdSetup& setup);

}  // namespace gj
