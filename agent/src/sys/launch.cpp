// The only code in gj-mpirun that forks or execs. Every system call is checked and named in the
// error it raises. The supervise loop follows tini: block the signals we care about, wait for
// them synchronously (sigtimedwait), forward the termination family to the job's process group,
// and reap every child that reaches us (we are a child subreaper, or PID 1).
#include "launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "exit_codes.h"
#include "internal.h"
#include "termination.h"

extern char** environ;

namespace gj {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
// Signals a supervisor passes on to the job (the job decides what they mean).
constexpr int kForwardedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

std::string errno_text(int err) { return std::strerror(err); }

[[noreturn]] void fail(int code, std::string message) { throw LaunchError{code, std::move(message)}; }

[[noreturn]] void fail_syscall(const std::string& call, int err, const std::string& fix = "") {
  std::string msg = call + " failed: " + errno_text(err);
  if (!fix.empty()) msg += "; " + fix;
  fail(exit_code::kInternal, msg);
}

WarningSink& warning_sink() {
  static WarningSink sink = [](const std::string& line) {
    std::fprintf(stderr, "gj-mpirun: warning: %s\n", line.c_str());
  };
  return sink;
}

std::vector<int>& owned() {  // the background sshd; see also the signal-time table (termination.h)
  static std::vector<int> pids;
  return pids;
}

void forget_owned(int pid) {
  forget_child(pid);
  auto& v = owned();
  v.erase(std::remove(v.begin(), v.end(), pid), v.end());
}

// What the child reports through the close-on-exec pipe when it cannot become argv.
struct ChildFailure {
  int stage;  // 0 setpgid, 1 dup2, 2 execv
  int err;
};

[[noreturn]] void child_report(int fd, int stage, int err) {
  ChildFailure f{stage, err};
  ssize_t ignored = write(fd, &f, sizeof f);
  (void)ignored;
  _exit(err == ENOENT ? exit_code::kNotFound : exit_code::kNotExecutable);
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

int exec_failure_code(int err) { return err == ENOENT ? exit_code::kNotFound : exit_code::kNotExecutable; }

std::string exec_failure_message(const std::string& path, int err) {
  std::string msg = "exec " + path + " failed: " + errno_text(err);
  if (err == ENOENT) msg += " (a missing #! interpreter or dynamic loader?)";
  if (err == ENOEXEC) msg += " (not a binary and no #! line; run it through its interpreter)";
  if (err == E2BIG) msg += " (argument list or environment too long; use a hostfile)";
  return msg;
}

void close_quietly(int fd) {
  if (fd >= 0) ::close(fd);
}

void reap_available() {
  int st = 0;
  int pid;
  while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0) forget_owned(pid);
}

// Sends SIGTERM, waits up to grace for the group/process to go away (reaping what we can),
// then SIGKILL. target < 0 addresses a process group.
void terminate_target(int target, std::chrono::milliseconds grace) {
  if (::kill(target, 0) != 0) return;
  ::kill(target, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < until) {
    reap_available();
    if (::kill(target, 0) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(target, SIGKILL);
}

bool is_termination_signal(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

int supervise(const std::vector<std::string>& argv) {
  // Orphans of the job are reparented to us instead of to PID 1 of the container (or of
  // the host), so we can reap them even when we are not PID 1.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) fail_syscall("prctl(PR_SET_CHILD_SUBREAPER)", errno);

  // With SIGCHLD ignored the kernel reaps children itself and waitpid() never reports the job.
  if (::signal(SIGCHLD, SIG_DFL) == SIG_ERR) fail_syscall("signal(SIGCHLD, SIG_DFL)", errno);

  sigset_t wanted;
  sigemptyset(&wanted);
  for (int s : kForwardedSignals) sigaddset(&wanted, s);
  sigaddset(&wanted, SIGCHLD);
  sigset_t previous;
  if (int e = ::pthread_sigmask(SIG_BLOCK, &wanted, &previous); e != 0) fail_syscall("pthread_sigmask", e);

  ChildProcess job;
  try {
    SpawnOptions opt;
    opt.new_process_group = true;
    opt.stdin_devnull = false;  // the job owns our stdin
    opt.foreground_tty = true;
    job = spawn_process(argv, opt);
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  const int group = job.pid;

  int job_status = 0;
  bool job_done = false;
  int termination_signal = 0;  // the first SIGTERM/SIGINT/SIGHUP/SIGQUIT we passed on
  while (!job_done) {
    siginfo_t info{};
    timespec tick{1, 0};  // also reap periodically in case a SIGCHLD was coalesced
    int sig = ::sigtimedwait(&wanted, &info, &tick);
    if (sig < 0 && errno != EAGAIN && errno != EINTR) fail_syscall("sigtimedwait", errno);
    if (sig > 0 && sig != SIGCHLD) {
      if (::kill(-group, sig) != 0 && errno == ESRCH) ::kill(job.pid, sig);
      if (termination_signal == 0 && is_termination_signal(sig)) termination_signal = sig;
    }
    int st = 0;
    int pid;
    while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0) {
      forget_owned(pid);
      if (pid == job.pid) {
        job_status = st;
        job_done = true;
      }
    }
    if (pid < 0 && errno != ECHILD) fail_syscall("waitpid", errno);
  }

  // The job is over: whatever is left of its process group, and the background processes we
  // started for it (the master's sshd), must not outlive it.
  terminate_target(-group, std::chrono::seconds(2));
  terminate_owned_processes(std::chrono::seconds(2));
  reap_available();
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  // mpiexec catches SIGTERM, tears the job down and exits 1, which would hide why the pod
  // ended. A job that fails after we passed on a termination signal was ended by it: report
  // 128+N as the shell (and Kubernetes) would for a process killed by signal N.
  if (termination_signal != 0 && WIFEXITED(job_status) && WEXITSTATUS(job_status) != 0) {
    return 128 + termination_signal;
  }
  return shell_status(job_status);
}

}  // namespace

std::string current_path_env() {
  const char* p = std::getenv("PATH");
  return (p != nullptr && *p != '\0') ? p : kDefaultPath;
}

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  auto nl = text.find_last_of('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

void set_warning_sink(WarningSink sink) {
  if (sink) warning_sink() = std::move(sink);
}

void warn(const std::string& line) { warning_sink()(line); }

std::string resolve_executable(const std::string& name, const std::string& path_env) {
  if (name.empty()) fail(exit_code::kNotFound, "cannot run an empty command name; give the program to run");
  auto check = [](const std::string& p, std::string* why) {
    struct stat st{};
    if (::stat(p.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) {
      *why = p + " is a directory, not a program";
      return false;
    }
    if (!S_ISREG(st.st_mode) || ::access(p.c_str(), X_OK) != 0) {
      *why = p + " is not executable (mode " + mode_text(st.st_mode) + "); chmod +x it or run it through its interpreter";
      return false;
    }
    return true;
  };
  std::string why;
  if (name.find('/') != std::string::npos) {
    if (check(name, &why)) return name;
    if (!why.empty()) fail(exit_code::kNotExecutable, why);
    fail(exit_code::kNotFound, name + ": not found (" + errno_text(errno) + "); check the path");
  }
  std::size_t start = 0;
  while (start <= path_env.size()) {
    std::size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    std::string candidate_why;
    if (check(candidate, &candidate_why)) return candidate;
    if (why.empty()) why = candidate_why;
    start = end + 1;
  }
  if (!why.empty()) fail(exit_code::kNotExecutable, name + ": found in PATH but " + why);
  fail(exit_code::kNotFound, name + ": not found in PATH=" + path_env + "; install it in the image or give an absolute path");
}

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return exit_code::kInternal;
}

std::optional<int> poll_exit(int pid) {
  int st = 0;
  int r;
  do r = ::waitpid(pid, &st, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  if (r < 0) fail_syscall("waitpid(" + std::to_string(pid) + ")", errno);
  forget_owned(pid);
  return shell_status(st);
}

int wait_exit(int pid) {
  int st = 0;
  int r;
  do r = ::waitpid(pid, &st, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) fail_syscall("waitpid(" + std::to_string(pid) + ")", errno);
  forget_owned(pid);
  return shell_status(st);
}

ChildProcess spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty()) fail(exit_code::kInternal, "spawn_process: empty argv (a bug in the caller)");
  const std::string path = resolve_executable(argv[0], current_path_env());

  // Everything the child needs is prepared before fork: after fork only async-signal-safe calls.
  std::vector<char*> cargv;
  cargv.reserve(argv.size() + 1);
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) fail_syscall("pipe2", errno);
  int out[2] = {-1, -1};
  if (options.capture_output && ::pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    close_quietly(report[0]);
    close_quietly(report[1]);
    fail_syscall("pipe2", e);
  }
  int devnull = -1;
  if (options.stdin_devnull) devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);

  const int pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {report[0], report[1], out[0], out[1], devnull}) close_quietly(fd);
    fail_syscall("fork", e, "is the pod's pids limit reached?");
  }
  if (pid == 0) {
    if (options.new_process_group && ::setpgid(0, 0) != 0) child_report(report[1], 0, errno);
    if (devnull >= 0 && ::dup2(devnull, 0) < 0) child_report(report[1], 1, errno);
    if (out[1] >= 0 && (::dup2(out[1], 1) < 0 || ::dup2(out[1], 2) < 0)) child_report(report[1], 1, errno);
    if (options.foreground_tty && ::isatty(STDIN_FILENO) == 1) {
      // Like tini: the job's new process group takes the terminal, or reading it would stop
      // the job with SIGTTIN. Best effort (no terminal in most pods).
      ::signal(SIGTTOU, SIG_IGN);
      ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    }
    reset_signals_for_exec();
    ::execve(path.c_str(), cargv.data(), environ);
    child_report(report[1], 2, errno);
  }
  remember_child(pid, false);  // a termination signal from here on also ends this child
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
    if (failure.stage == 0) fail_syscall("setpgid (child of " + path + ")", failure.err);
    if (failure.stage == 1) fail_syscall("dup2 (child of " + path + ")", failure.err);
    fail(exec_failure_code(failure.err), exec_failure_message(path, failure.err));
  }
  if (out[0] >= 0) {
    int flags = ::fcntl(out[0], F_GETFL);
    if (flags < 0 || ::fcntl(out[0], F_SETFL, flags | O_NONBLOCK) != 0) fail_syscall("fcntl(O_NONBLOCK)", errno);
  }
  return ChildProcess{pid, out[0]};
}

CaptureResult run_and_capture(const std::vector<std::string>& argv, std::size_t max_bytes,
                              std::chrono::milliseconds timeout) {
  SpawnOptions opt;
  opt.capture_output = true;
  ChildProcess child = spawn_process(argv, opt);
  CaptureResult result;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(child.pid, SIGKILL);
      close_quietly(child.output_fd);
      wait_exit(child.pid);
      fail(exit_code::kSetupFailed, "`" + argv[0] + (argv.size() > 1 ? " " + argv[1] : std::string()) +
                                        "` did not finish within " + std::to_string(timeout.count() / 1000) + " s");
    }
    pollfd p{child.output_fd, POLLIN, 0};
    const int pr = ::poll(&p, 1, static_cast<int>(left.count()));
    if (pr < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      close_quietly(child.output_fd);
      fail_syscall("poll", e);
    }
    if (pr == 0) continue;
    ssize_t n = ::read(child.output_fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    std::size_t room = max_bytes > result.output.size() ? max_bytes - result.output.size() : 0;
    result.output.append(buf, std::min<std::size_t>(room, static_cast<std::size_t>(n)));
    if (result.output.size() >= max_bytes) {  // enough: what follows is not read at all
      ::kill(child.pid, SIGKILL);
      result.truncated = true;
      break;
    }
  }
  close_quietly(child.output_fd);
  result.status = wait_exit(child.pid);
  return result;
}

std::string capture_output(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                           std::size_t max_bytes) {
  // The output is returned whatever the exit status: version banners are what callers want,
  // and some MPI launchers print them with a non-zero status.
  return run_and_capture(argv, max_bytes, timeout).output;
}

namespace {

[[noreturn]] void exec_in_place(const std::vector<std::string>& argv, bool reset_signals) {
  if (argv.empty()) fail(exit_code::kInternal, "exec: empty argv (a bug in the caller)");
  const std::string path = resolve_executable(argv[0], current_path_env());
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  if (reset_signals) reset_signals_for_exec();
  ::execve(path.c_str(), cargv.data(), environ);
  int e = errno;
  fail(exec_failure_code(e), exec_failure_message(path, e));
}

}  // namespace

int run_job(const std::vector<std::string>& argv, bool supervise_job) {
  if (supervise_job) return supervise(argv);
  exec_in_place(argv, true);
}

void exec_rank(const std::vector<std::string>& argv) { exec_in_place(argv, false); }

void register_owned_process(int pid) {
  // A safety net for every path that ends the agent with exit() (a readiness failure, an
  // error after the master's sshd started): the sshd must not outlive us. exec (run_job
  // without supervision) skips atexit, so there mpiexec inherits the sshd as its child.
  static const bool at_exit_registered =
      std::atexit([] { terminate_owned_processes(std::chrono::milliseconds(500)); }) == 0;
  (void)at_exit_registered;
  owned().push_back(pid);
  forget_child(pid);
  remember_child(pid, true);
}

std::vector<int> owned_process_ids() { return owned(); }

void terminate_owned_processes(std::chrono::milliseconds grace) {
  std::vector<int> pids = owned();
  for (int pid : pids) ::kill(pid, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    std::vector<int> alive;
    for (int pid : pids) {
      int r = ::waitpid(pid, nullptr, WNOHANG);
      if (r == 0) alive.push_back(pid);  // r < 0: already reaped by someone (ECHILD)
    }
    pids = alive;
    if (pids.empty() || std::chrono::steady_clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int pid : pids) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  for (int pid : owned()) forget_child(pid);
  owned().clear();
}

void write_termination_message_to(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return;  // absent outside Kubernetes: best effort by contract
  // Kubernetes keeps at most 4096 bytes; one line, so the pod status stays readable.
  std::string text = line.substr(0, 4000);
  std::replace(text.begin(), text.end(), '\n', ' ');
  text += '\n';
  ssize_t n = ::write(fd, text.data(), text.size());
  (void)n;
  ::close(fd);
}

void write_termination_message(const std::string& line) { write_termination_message_to("/dev/termination-log", line); }

}  // namespace gj
