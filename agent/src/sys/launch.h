// The only code that forks, execs, writes files or touches sshd. Everything it does is decided
// by the caller (planning is pure and lives elsewhere); these functions just carry it out,
// checking and naming every system call in their errors.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gj {

// Everything needed to run an sshd that serves MPI ranks in a pod.
struct SshdSetup {
  std::string sshd_path = "/usr/sbin/sshd";  // GJ_SSHD / --sshd
  std::string state_dir = "/run/gj-mpirun";  // GJ_STATE_DIR: 0700, root-owned; keys, config
  int port = 22;                             // GJ_SSH_PORT / --ssh-port
  std::string ssh_dir = "/root/.ssh";        // GJ_SSH_DIR: mounted (read-only) keys
  // Written into the generated sshd_config as SetEnv so every ssh session (every MPI rank on
  // this node) sees this pod's own values. Already filtered and ordered by the caller.
  std::vector<std::pair<std::string, std::string>> session_env;
};

// Thrown by everything below; exit_code is the documented gj-mpirun exit code for the class.
struct LaunchError {
  int exit_code;
  std::string message;  // one line: the call, the value, the fix
};

// Worker: creates the privilege separation dir, host keys (private to the pod, in state_dir)
// and a hardened sshd_config, then execs `sshd -D -e -f <config>`. Never returns.
[[noreturn]] void exec_worker_sshd(const SshdSetup& setup);

// Master: same preparation, starts sshd in the background (not waited for here).
void start_background_sshd(const SshdSetup& setup);

// Copies the client private keys found in setup.ssh_dir to <state_dir>/ssh/ with mode 0600
// (mounted secrets are often group-readable and ssh refuses them). Returns the copied paths.
std::vector<std::string> prepare_client_keys(const SshdSetup& setup);

// Runs argv, returns its stdout+stderr (for `mpiexec --version`). Throws LaunchError.
std::string capture_output(const std::vector<std::string>& argv);

// Runs the job: argv[0] resolved through PATH. When supervise is false, execs (never
// returns). When true (PID 1 duty), forks, forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT to the
// child's process group, reaps every child, and returns the exit status as the shell does
// (code, or 128+N when killed by signal N). Exec failures: 127 not found, 126 not executable.
int run_job(const std::vector<std::string>& argv, bool supervise);

// Writes one line to /dev/termination-log when that file exists (Kubernetes shows it in the
// pod status). Best effort.
void write_termination_message(const std::string& line);

}  // namespace gj
