#include "spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exit_codes.h"
#include "defaults.h"
#include "internal.h"
#include "path_lookup.h"
#include "termination.h"

extern char** environ;

namespace gj {
namespace {

// What the child reports through the close-on-exec pipe when it cannot become argv.
struct ChildFailure {
  int stage;  // 0 setpgid, 1 dup2, 2 execv, 3 prctl
  int err;
};

int exec_failure_code(int err) { return err == ENOENT ? exit_code::kNotFound : exit_code::kNotExecutable; }

[[noreturn]] void child_report(int fd, int stage, int err) {
  ChildFailure f{stage, err};
  ssize_t ignored = write(fd, &f, sizeof f);
  (void)ignored;
  _exit(exec_failure_code(err));
}

// Ignored signals and the signal mask survive exec: the job gets default dispositions and an
// empty mask whatever we inherited (nohup, a careless parent). Async-signal-safe.
void reset_signals_for_exec() {
  sigset_t none;
  sigemptyset(&none);
  ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
}

std::string exec_failure_message(const std::string& path, int err) {
  std::string msg = "exec " + path + " failed: " + std::strerror(err);
  if (err == ENOENT) msg += " (a missing #! interpreter or dynamic loader?)";
  if (err == ENOEXEC) msg += " (not a binary and no #! line; run it through its interpreter)";
  if (err == E2BIG) msg += " (argument list or environment too long; use a hostfile)";
  return msg;
}

void close_quietly(int fd) {
  if (fd >= 0) ::close(fd);
}

// argv as execve wants it; points into argv, which must outlive the result.
std::vector<char*> exec_argv(const std::vector<std::string>& argv) {
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  return cargv;
}

// The block execve takes and the PATH argv[0] is looked up in; points into `environment`.
struct ExecEnvironment {
  std::vector<char*> block;
  std::string path;
  char** envp() { return block.empty() ? environ : block.data(); }
};

ExecEnvironment exec_environment(const Environment* environment) {
  ExecEnvironment out;
  if (environment == nullptr) {
    out.path = current_path_env();
    return out;
  }
  out.block.reserve(environment->size() + 1);
  for (const auto& entry : *environment) {
    out.block.push_back(const_cast<char*>(entry.c_str()));
    if (entry.compare(0, 5, "PATH=") == 0) out.path = entry.substr(5);
  }
  out.block.push_back(nullptr);
  if (out.path.empty()) out.path = defaults::kShellPath;
  return out;
}

[[noreturn]] void exec_in_place(const std::vector<std::string>& argv, const Environment* environment,
                                bool reset_signals) {
  if (argv.empty()) throw_launch_error(exit_code::kInternal, "exec: empty argv (a bug in the caller)");
  ExecEnvironment env = exec_environment(environment);
  const std::string path = resolve_executable(argv[0], env.path);
  std::vector<char*> cargv = exec_argv(argv);
  if (reset_signals) reset_signals_for_exec();
  ::execve(path.c_str(), cargv.data(), env.envp());
  int e = errno;
  throw_launch_error(exec_failure_code(e), exec_failure_message(path, e));
}

}  // namespace

ChildProcess spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) throw_launch_error(exit_code::kInternal, "spawn_process: empty argv (a bug in the caller)");
  ExecEnvironment env = exec_environment(options.environment);
  const std::string path = resolve_executable(argv[0], env.path);

  // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
  std::vector<char*> cargv = exec_argv(argv);
  char** const envp = env.envp();

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) throw_syscall_error("pipe2", errno);
  int out[2] = {-1, -1};
  if (options.capture_output && ::pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    close_quietly(report[0]);
    close_quietly(report[1]);
    throw_syscall_error("pipe2", e);
  }
  int devnull = -1;
  if (options.stdin_devnull) devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  const int parent = ::getpid();
  const int pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {report[0], report[1], out[0], out[1], devnull}) close_quietly(fd);
    throw_syscall_error("fork", e, "is the pod's pids limit reached?");
  }
  if (pid == 0) {
    if (options.new_process_group && ::setpgid(0, 0) != 0) child_report(report[1], 0, errno);
    if (devnull >= 0 && ::dup2(devnull, 0) < 0) child_report(report[1], 1, errno);
    if (out[1] >= 0 && (::dup2(out[1], 1) < 0 || ::dup2(out[1], 2) < 0)) child_report(report[1], 1, errno);
    if (out[1] < 0 && options.stderr_fd >= 0 && ::dup2(options.stderr_fd, 2) < 0) child_report(report[1], 1, errno);
    if (options.foreground_tty && ::isatty(STDIN_FILENO) == 1) {
      // Like tini: the job's new process group takes the terminal, or reading it would stop
      // the job with SIGTTIN. Best effort (no terminal in most pods).
      ::signal(SIGTTOU, SIG_IGN);
      ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    }
    if (options.die_with_parent) {
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) child_report(report[1], 3, errno);
      if (::getppid() != parent) _exit(exit_code::kInternal);  // the parent died before prctl
    }
    if (!options.keep_signal_state) reset_signals_for_exec();
    ::execve(path.c_str(), cargv.data(), envp);
    child_report(report[1], 2, errno);
  }
  remember_child(pid, false, options.new_process_group);  // a termination signal from here on also ends it
  close_quietly(report[1]);
  close_quietly(out[1]);
  close_quietly(devnull);

  ChildFailure failure{};
  ssize_t n;
  do n = ::read(report[0], &failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  close_quietly(report[0]);
  if (n == static_cast<ssize_t>(sizeof failure)) {
    close_quietly(out[0]);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    forget_child(pid);
    if (failure.stage == 0) throw_syscall_error("setpgid (child of " + path + ")", failure.err);
    if (failure.stage == 1) throw_syscall_error("dup2 (child of " + path + ")", failure.err);
    if (failure.stage == 3) throw_syscall_error("prctl(PR_SET_PDEATHSIG) (child of " + path + ")", failure.err);
    throw_launch_error(exec_failure_code(failure.err), exec_failure_message(path, failure.err));
  }
  if (out[0] >= 0) {
    int flags = ::fcntl(out[0], F_GETFL);
    if (flags < 0 || ::fcntl(out[0], F_SETFL, flags | O_NONBLOCK) != 0) throw_syscall_error("fcntl(O_NONBLOCK)", errno);
  }
  return ChildProcess{pid, out[0]};
}

int start_log_filter(int out_fd, bool (*drop)(const std::string& line)) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw_syscall_error("pipe2 (log filter)", errno);
  const int pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_quietly(p[0]);
    close_quietly(p[1]);
    throw_syscall_error("fork (log filter)", e, "is the pod's pids limit reached?");
  }
  if (pid == 0) {
    ::close(p[1]);
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
    std::string pending;
    char buf[4096];
    const auto emit = [&](const std::string& line) {
      if (drop(line)) return;
      const std::string out = line + "\n";
      const char* d = out.data();
      std::size_t n = out.size();
      while (n > 0) {
        const ssize_t w = ::write(out_fd, d, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        d += w;
        n -= static_cast<std::size_t>(w);
      }
    };
    for (;;) {
      const ssize_t n = ::read(p[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      std::size_t start = 0, nl;
      while ((nl = pending.find('\n', start)) != std::string::npos) {
        emit(pending.substr(start, nl - start));
        start = nl + 1;
      }
      pending.erase(0, start);
      if (pending.size() > 65536) {  // no newline in 64 KiB: pass it on as it is
        emit(pending);
        pending.clear();
      }
    }
    if (!pending.empty()) emit(pending);
    _exit(0);
  }
  ::close(p[0]);
  return p[1];
}

void exec_job(const std::vector<std::string>& argv, const Environment* environment) {
  exec_in_place(argv, environment, true);
}


}  // namespace gj
