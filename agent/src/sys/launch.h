// The process API: fork/exec (run_job, spawn_process, run_and_capture), waits, the registry of
// owned background processes, PATH lookup, warnings and the termination log. Everything it does
// is decided by the caller (planning is pure, in agent/src); these functions carry it out,
// checking and naming every system call in their errors. sshd preparation: sshd_setup.h.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent_error.h"
#include "defaults.h"

namespace gj {

// Everything below throws LaunchError (agent_error.h) with the documented exit code of the class.

// Runs argv, returns its stdout+stderr (for `mpiexec --version`): at most max_bytes (then the
// child is killed), within timeout (else the child is killed and LaunchError kSetupFailed names
// the command and the limit). Throws LaunchError.
std::string capture_output(const std::vector<std::string>& argv,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10),
                           std::size_t max_bytes = 64 * 1024);

// Runs the job: argv[0] resolved through PATH. When supervise is false, execs (never
// returns). When true (PID 1 duty), forks, forwards SIGTERM/SIGINT/SIGHUP/SIGQUIT (and
// SIGUSR1/SIGUSR2) to the child's process group, reaps every child, and returns the exit status as the shell does
// (code, or 128+N when killed by signal N). Exec failures: 127 not found, 126 not executable.
int run_job(const std::vector<std::string>& argv, bool supervise);
// A rank's exec (gj-mpirun --rank-exec): argv[0] through PATH, with the signal dispositions and
// mask the MPI launcher gave this process left as they are, as if it had started the program
// itself (run_job resets them; hydra's ranks rely on what their proxy set). Never returns.
[[noreturn]] void exec_rank(const std::vector<std::string>& argv);

// Writes one line to /dev/termination-log when that file exists (Kubernetes shows it in the
// pod status). Best effort.
void write_termination_message(const std::string& line);

// ---- Termination log, PATH lookup and process handling -----------------------------------

// Same as write_termination_message, to an explicit path (tests).
void write_termination_message_to(const std::string& path, const std::string& line);

// Where non-fatal warnings of this library go (skipped session variables, a locked root
// account, ...). Default: one line on stderr. The agent routes them into its logger.
using WarningSink = std::function<void(const std::string&)>;
void set_warning_sink(WarningSink sink);

// Resolves a command name the way the shell does: a name with '/' is taken as is, otherwise
// searched in path_env (":"-separated; empty entries mean "."). Throws LaunchError 127 (not
// found) or 126 (found but not an executable regular file), naming what was tried.
std::string resolve_executable(const std::string& name, const std::string& path_env);

// A child started by spawn_process. output_fd (when capture_output) carries its stdout+stderr;
// the caller reads it to EOF and closes it.
struct ChildProcess {
  int pid = -1;
  int output_fd = -1;
};

struct SpawnOptions {
  bool new_process_group = false;  // child calls setpgid(0, 0)
  bool capture_output = false;     // stdout+stderr into a pipe (ChildProcess::output_fd, O_NONBLOCK)
  bool stdin_devnull = true;       // never let a child read our stdin (ssh would)
  bool foreground_tty = false;     // with new_process_group: make it the terminal's foreground group
};

// fork + exec of argv (argv[0] resolved through $PATH), with an empty signal mask and default
// signal dispositions in the child. Exec failures in the child are reported
// back through a close-on-exec pipe and thrown here as LaunchError 126/127, so the caller
// never sees a "successful" spawn of something that could not run.
ChildProcess spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options);

// waitpid(pid, WNOHANG): nullopt while running, else the shell-style status (code or 128+N).
std::optional<int> poll_exit(int pid);
// Blocking waitpid; shell-style status.
int wait_exit(int pid);
// Converts a waitpid status to the shell convention (code, or 128+N when killed by N).
int shell_status(int wait_status);

// Result of run_and_capture: shell-style status plus everything the child wrote.
struct CaptureResult {
  int status = 0;
  std::string output;
  bool truncated = false;  // max_bytes reached: the child was killed there
};
// Runs argv to completion (stdin /dev/null), output capped at max_bytes (the child is killed
// there), within timeout (else killed, LaunchError kSetupFailed).
CaptureResult run_and_capture(const std::vector<std::string>& argv, std::size_t max_bytes = 1 << 20,
                              std::chrono::milliseconds timeout = std::chrono::minutes(2));

// Background processes we started and must not leave behind (the master's sshd). run_job's
// supervise mode terminates them after the job has exited; so does exit() (an atexit handler);
// terminate_owned_processes() does it explicitly (SIGTERM, then SIGKILL after grace). Exec
// (run_job without supervision) leaves them to the exec'd job, as its children.
void terminate_owned_processes(std::chrono::milliseconds grace = std::chrono::seconds(2));
std::vector<int> owned_process_ids();

}  // namespace gj
