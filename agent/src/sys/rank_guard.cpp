#include "rank_guard.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_exit.h"
#include "spawn.h"

namespace gj {
namespace {

volatile sig_atomic_t g_program_pid = 0;
volatile sig_atomic_t g_early_signal = 0;  // arrived before the program's pid was known

extern "C" void pass_on(int sig) {
  if (g_program_pid > 0) {
    ::kill(g_program_pid, sig);
  } else {
    g_early_signal = sig;
  }
}

// The signals a launcher sends a rank to end or notify it; ignored ones stay ignored.
void pass_signals_on() {
  for (int sig : kForwardedSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = pass_on;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

void ask_launcher_to_abort(int pmi_fd, int status) {
  const std::string line = "cmd=abort exitcode=" + std::to_string(status) + "\n";
  ssize_t n = ::send(pmi_fd, line.data(), line.size(), MSG_NOSIGNAL);
  (void)n;
}

}  // namespace

int run_rank_guarded(const std::vector<std::string>& argv, int pmi_fd, const Environment* environment) {
  // Installed before the fork: the child's caught signals return to their defaults at exec,
  // and one arriving before that finds no pid to pass it to.
  pass_signals_on();
  SpawnOptions opt;
  opt.stdin_devnull = false;  // the rank's stdin is the launcher's
  opt.keep_signal_state = true;
  opt.die_with_parent = true;
  opt.environment = environment;
  const ChildProcess program = spawn_process(argv, opt);
  g_program_pid = program.pid;
  if (const int early = g_early_signal; early != 0) ::kill(program.pid, early);
  const int st = wait_status(program.pid);
  g_program_pid = 0;
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
  ask_launcher_to_abort(pmi_fd, shell_status(st));
  if (WIFSIGNALED(st)) {
    const int sig = WTERMSIG(st);
    ::signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::raise(sig);
  }
  return shell_status(st);
}

}  // namespace gj
