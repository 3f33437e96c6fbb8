// run_rank_guarded without a job monitor: a rank's program under hydra; a failure is reported on
// the PMI connection.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "rank_guard.h"

namespace {

// What the guard wrote on its end of the PMI connection (read without blocking).
std::string pending_text(int fd) {
  std::string out;
  char buf[256];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, 0) == 1) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// The guard as hydra's rank runs it without a job monitor.
int guarded(const std::vector<std::string>& argv, int pmi_fd) {
  gj::RankGuard g;
  g.argv = argv;
  g.pmi_fd = pmi_fd;
  g.environment = {"PATH=/usr/bin:/bin"};
  return gj::run_rank_guarded(g);
}

struct PmiPair {
  int fds[2] = {-1, -1};
  PmiPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
  ~PmiPair() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
};

}  // namespace

TEST_CASE("rank guard: the program's exit code is the rank's - a failure asks the launcher to abort") {
  struct Row {
    const char* script;
    int code;
    const char* reported;
  };
  auto row = GENERATE(Row{"exit 0", 0, ""}, Row{"exit 7", 7, "cmd=abort exitcode=7\n"},
                      Row{"exit 1", 1, "cmd=abort exitcode=1\n"});
  INFO(row.script);
  PmiPair pmi;
  CHECK(guarded({"/bin/sh", "-c", row.script}, pmi.fds[1]) == row.code);
  CHECK(pending_text(pmi.fds[0]) == row.reported);
}

TEST_CASE("rank guard: a program killed by a signal is reported as 128+N and the rank dies of N too") {
  PmiPair pmi;
  const pid_t guard = ::fork();
  REQUIRE(guard >= 0);
  if (guard == 0) {
    const int rc = guarded({"/bin/sh", "-c", "kill -USR1 $$"}, pmi.fds[1]);
    _exit(rc == 0 ? 100 : 101);  // not reached: the guard raises the signal itself
  }
  int st = 0;
  REQUIRE(::waitpid(guard, &st, 0) == guard);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGUSR1);
  CHECK(pending_text(pmi.fds[0]) == "cmd=abort exitcode=" + std::to_string(128 + SIGUSR1) + "\n");
}

TEST_CASE("rank guard: SIGTERM to the rank reaches its program - ignored signals stay ignored") {
  PmiPair pmi;
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t guard = ::fork();
  REQUIRE(guard >= 0);
  if (guard == 0) {
    ::close(ready[0]);
    ::signal(SIGHUP, SIG_IGN);  // as a launcher may leave it (nohup)
    const std::string script = "trap 'exit 42' TERM; kill -HUP $$; echo x >&" + std::to_string(ready[1]) +
                               "; while :; do sleep 0.05; done";
    ::fcntl(ready[1], F_SETFD, 0);  // the script writes to it
    _exit(guarded({"/bin/sh", "-c", script}, pmi.fds[1]));
  }
  ::close(ready[1]);
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);  // the program runs, and survived its SIGHUP
  ::close(ready[0]);
  ::kill(guard, SIGTERM);
  int st = 0;
  REQUIRE(::waitpid(guard, &st, 0) == guard);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 42);
  CHECK(pending_text(pmi.fds[0]) == "cmd=abort exitcode=42\n");
}
