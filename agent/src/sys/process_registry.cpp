#include "process_registry.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <thread>

#include "termination.h"

namespace gj {
namespace {

std::vector<int>& owned() {
  static std::vector<int> pids;
  return pids;
}

}  // namespace

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

void forget_owned(int pid) {
  forget_child(pid);
  auto& v = owned();
  v.erase(std::remove(v.begin(), v.end(), pid), v.end());
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

}  // namespace gj
