// The only code in gj-mpirun that forks or execs: spawn_process starts a child, exec_job replaces this
// process. argv[0] is resolved through $PATH (path_lookup.h); exec
// failures are LaunchError 127 (not found) or 126 (not executable), naming the path and a likely
// cause. Every system call is checked and named in the error it raises.
#pragma once

#include <string>
#include <vector>

namespace gj {

// A child started by spawn_process. output_fd (when capture_output) carries its stdout+stderr;
// the caller reads it to EOF and closes it.
struct ChildProcess {
  int pid = -1;
  int output_fd = -1;
};

// The environment a program gets: "NAME=value" entries, as execve takes them. The agent builds it
// from the environment main() copied once plus what the plan adds, and passes it here; nothing
// in gj-mpirun changes its own environment.
using Environment = std::vector<std::string>;

struct SpawnOptions {
  bool new_process_group = false;  // child calls setpgid(0, 0)
  bool capture_output = false;     // stdout+stderr into a pipe (ChildProcess::output_fd, O_NONBLOCK)
  bool stdin_devnull = true;       // never let a child read our stdin (ssh would)
  bool foreground_tty = false;     // with new_process_group: make it the terminal's foreground group
  bool keep_signal_state = false;  // leave the inherited mask and ignored signals as they are
  bool die_with_parent = false;    // the child gets SIGKILL when this process dies (PR_SET_PDEATHSIG)
  int stderr_fd = -1;              // >= 0: the child's stderr (a rank wrapper's relay pipe); not with capture_output
  const Environment* environment = nullptr;  // the child's environment and PATH; nullptr: this process's
};

// fork + exec of argv, with an empty signal mask and default signal dispositions in the child
// (unless keep_signal_state).
// Exec failures in the child are reported back through a close-on-exec pipe and thrown here,
// so the caller never sees a "successful" spawn of something that could not run. The child is
// in the signal-time table (termination.h) until it is reaped (child_exit.h).
ChildProcess spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options);

// A child of this process (forked, not exec'd) that copies what is written to the returned
// pipe end to out_fd line by line, leaving out the lines `drop` matches, and exits at EOF (when
// every writer closed the pipe). Pass the fd as a child's stderr (SpawnOptions::stderr_fd, or
// dup2 before exec) and close it. The relay ignores termination signals: it ends with its writer,
// after the writer's last line. For sshd's log (sshd_setup.h).
int start_log_filter(int out_fd, bool (*drop)(const std::string& line));

// Replaces this process with argv, with default signal dispositions and an empty mask whatever
// we inherited (nohup, a careless parent). argv[0] is looked up in the environment's PATH;
// nullptr: this process's environment. Returns only by throwing.
[[noreturn]] void exec_job(const std::vector<std::string>& argv, const Environment* environment = nullptr);


}  // namespace gj
