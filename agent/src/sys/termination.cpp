#include "termination.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <initializer_list>

namespace gj {
namespace {

constexpr int kSlots = 256;  // children alive at once: the gate's parallel ssh checks are 16
std::atomic<int> g_pid[kSlots];
std::atomic<bool> g_owned[kSlots];
std::atomic<bool> g_group[kSlots];

extern "C" void on_termination(int sig) {
  for (int i = 0; i < kSlots; ++i) {
    const int pid = g_pid[i].load();
    if (pid > 0) ::kill(g_group[i].load() ? -pid : pid, g_owned[i].load() ? SIGTERM : SIGKILL);
  }
  _exit(128 + sig);
}

}  // namespace

void remember_child(int pid, bool owned, bool group) {
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_pid[i].compare_exchange_strong(expected, pid)) {
      g_owned[i].store(owned);
      g_group[i].store(group);
      return;
    }
  }
  // A full table only loses the signal-time cleanup of this child; exit paths still stop it.
}

void forget_child(int pid) {
  for (int i = 0; i < kSlots; ++i) {
    int expected = pid;
    if (g_pid[i].compare_exchange_strong(expected, 0)) return;
  }
}

void install_termination_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_termination;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&sa.sa_mask, sig);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) ::sigaction(sig, &sa, nullptr);
}

}  // namespace gj
