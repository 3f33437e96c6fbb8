// The supervise loop follows tini: block the signals we care about, wait for them synchronously
// (sigtimedwait), forward them to the job's process group, and reap every child that reaches us.
#include "supervise.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "child_exit.h"
#include "internal.h"
#include "process_registry.h"
#include "spawn.h"

namespace gj {
namespace {

bool is_termination_signal(int sig) {
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
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

// The processes the kernel re-parented to us as a subreaper (a job's child that called setsid
// left its process group, so ending the group misses it): /proc/<pid>/stat's parent field.
std::vector<int> adopted_children() {
  std::vector<int> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  const int self = ::getpid();
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string text;
    std::getline(stat, text);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so parse after the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == self && state != 'Z') out.push_back(static_cast<int>(pid));
  }
  ::closedir(proc);
  return out;
}

// SIGTERM to every adopted child but those in `spare` (the owned processes another attempt
// needs), up to `grace` for them to go, then SIGKILL (reaping as we go).
void end_adopted_children(std::chrono::milliseconds grace, const std::vector<int>& spare = {}) {
  const auto adopted = [&spare] {
    std::vector<int> out = adopted_children();
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](int pid) { return std::find(spare.begin(), spare.end(), pid) != spare.end(); }),
              out.end());
    return out;
  };
  std::vector<int> left = adopted();
  if (left.empty()) return;
  for (int pid : left) ::kill(pid, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + grace;
  while (!left.empty() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    reap_available();
    left = adopted();
  }
  for (int pid : left) ::kill(pid, SIGKILL);
  reap_available();
}

int supervise(const std::vector<std::string>& argv, const Environment* environment, JobEnd* end) {
  // Orphans of the job are reparented to us instead of to PID 1 of the container (or of
  // the host), so we can reap them even when we are not PID 1.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) throw_syscall_error("prctl(PR_SET_CHILD_SUBREAPER)", errno);

  // With SIGCHLD ignored the kernel reaps children itself and waitpid() never reports the job.
  if (::signal(SIGCHLD, SIG_DFL) == SIG_ERR) throw_syscall_error("signal(SIGCHLD, SIG_DFL)", errno);

  sigset_t wanted;
  sigemptyset(&wanted);
  for (int s : kForwardedSignals) sigaddset(&wanted, s);
  sigaddset(&wanted, SIGCHLD);
  sigset_t previous;
  if (int e = ::pthread_sigmask(SIG_BLOCK, &wanted, &previous); e != 0) throw_syscall_error("pthread_sigmask", e);

  ChildProcess job;
  try {
    SpawnOptions opt;
    opt.new_process_group = true;
    opt.stdin_devnull = false;  // the job owns our stdin
    opt.foreground_tty = true;
    opt.environment = environment;
    job = spawn_process(argv, opt);
  } catch (...) {
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  const int group = job.pid;

  int job_status = 0;
  bool job_done = false;
  int termination_signal = 0;  // the first SIGTERM/SIGINT/SIGHUP/SIGQUIT we passed on
  // Ending a failed job: 0 not asked, 1 waiting for it to end by itself, 2 SIGTERM sent, 3 SIGKILL sent.
  int ending = 0;
  std::chrono::steady_clock::time_point ending_since{};
  int held_signal = 0;  // a termination signal held back for the stop grace (JobEnd::stop)
  std::chrono::steady_clock::time_point held_until{};
  while (!job_done) {
    siginfo_t info{};
    // Also reap periodically in case a SIGCHLD was coalesced; with a monitor, check its request often.
    timespec tick = end != nullptr || held_signal != 0 ? timespec{0, 100 * 1000 * 1000} : timespec{1, 0};
    if (end != nullptr && end->requested != nullptr && *end->requested) {
      const auto now = std::chrono::steady_clock::now();
      if (ending == 0) {
        ending = 1;
        ending_since = now;
      } else if (ending == 1 && now >= ending_since + end->grace) {
        ending = 2;
        if (::kill(-group, SIGTERM) != 0 && errno == ESRCH) ::kill(job.pid, SIGTERM);
      } else if (ending == 2 && now >= ending_since + end->grace + end->term_grace) {
        ending = 3;
        ::kill(-group, SIGKILL);
        ::kill(job.pid, SIGKILL);
      }
    }
    if (held_signal != 0 &&
        (std::chrono::steady_clock::now() >= held_until || (end->stop_done && end->stop_done()))) {
      if (::kill(-group, held_signal) != 0 && errno == ESRCH) ::kill(job.pid, held_signal);
      held_signal = 0;
    }
    int sig = ::sigtimedwait(&wanted, &info, &tick);
    if (sig < 0 && errno != EAGAIN && errno != EINTR) throw_syscall_error("sigtimedwait", errno);
    if (sig > 0 && sig != SIGCHLD) {
      // The first termination signal, with a stop path and grace: every rank is asked to stop,
      // and the signal waits while programs that poll for the request save and leave.
      const bool hold = held_signal == 0 && termination_signal == 0 && is_termination_signal(sig) &&
                        end != nullptr && end->stop && end->stop_grace.count() > 0 &&
                        (end->requested == nullptr || !*end->requested) && end->stop();
      if (hold) {
        held_signal = sig;
        held_until = std::chrono::steady_clock::now() + end->stop_grace;
      } else {
        if (held_signal != 0 && ::kill(-group, held_signal) != 0 && errno == ESRCH) ::kill(job.pid, held_signal);
        held_signal = 0;
        if (::kill(-group, sig) != 0 && errno == ESRCH) ::kill(job.pid, sig);
      }
      if (termination_signal == 0 && is_termination_signal(sig)) {
        termination_signal = sig;
        if (end != nullptr && (end->requested == nullptr || !*end->requested)) end->terminated_by = sig;
      }
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
    if (pid < 0 && errno != ECHILD) throw_syscall_error("waitpid", errno);
  }

  // The job is over: whatever is left of its process group, and the background processes we
  // started for it (the master's sshd), must not outlive it, unless another attempt follows.
  terminate_target(-group, std::chrono::seconds(2));
  const bool keep_owned = end != nullptr && end->keep_owned;
  if (!keep_owned) terminate_owned_processes(std::chrono::seconds(2));
  end_adopted_children(std::chrono::seconds(2), keep_owned ? owned_process_ids() : std::vector<int>{});
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

int run_job(const std::vector<std::string>& argv, bool supervise_job, const Environment* environment, JobEnd* end) {
  if (supervise_job) return supervise(argv, environment, end);
  exec_job(argv, environment);
}

}  // namespace gj
